package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// ErrNoConditionalWrites is returned by NewS3 when the server accepts a
// second "If-None-Match: *" PUT of an existing key, or refuses the header:
// PutIfAbsent could not guarantee a single winner there, and a silent race
// on a manifest would lose a recording, so the store is refused up front.
var ErrNoConditionalWrites = errors.New("the S3 server does not honour conditional writes (PUT with If-None-Match: *)")

// ErrReadOnly is returned by the writing methods of an S3 store opened
// with S3Options.ReadOnly.
var ErrReadOnly = errors.New("the store is read-only")

// partSize is the multipart part size of Put: the memory one upload holds
// per part in flight, and with S3's 10000-part limit the largest streamed
// object (160 GiB).
const partSize = 16 << 20

// S3Options configures an S3 store. It holds no secret, so it may be
// logged or stored in the catalog: the keys come from the environment or
// from a credentials file named here.
type S3Options struct {
	// Endpoint is the server's URL, "https://host[:port]" or
	// "http://host[:port]"; the scheme turns TLS on or off. Empty means
	// AWS S3 (https://s3.amazonaws.com).
	Endpoint string `json:"endpoint,omitempty"`
	// Region is the bucket's region; empty lets the client ask the server.
	Region string `json:"region,omitempty"`
	// CredentialsFile is an AWS shared-credentials file ("[profile]",
	// aws_access_key_id, aws_secret_access_key) read instead of the
	// environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsFile string `json:"credentials_file,omitempty"`
	// Profile is the file's profile; empty means "default".
	Profile string `json:"profile,omitempty"`
	// ReadOnly opens the bucket for reading only (a second node): no
	// conditional-write probe, and Put, PutIfAbsent and Delete fail with
	// ErrReadOnly.
	ReadOnly bool `json:"read_only,omitempty"`
}

// S3 is a Store in an S3-compatible bucket under a key prefix, through
// github.com/minio/minio-go/v7. PutIfAbsent is a PUT with
// "If-None-Match: *", which NewS3 checks the server honours.
type S3 struct {
	client *minio.Client
	core   minio.Core
	bucket string
	prefix string // "" or ending in '/'
	url    string
	opts   S3Options
}

// ParseURL splits "s3://BUCKET/PREFIX" into the bucket and the key prefix
// ("" or ending in '/'). The prefix must itself be a valid key, so objects
// of two archives sharing a bucket cannot overlap by accident.
func ParseURL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("blob: remote %q: %w", raw, err)
	}
	if u.Scheme != "s3" {
		return "", "", fmt.Errorf("blob: remote %q: want s3://BUCKET/PREFIX", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("blob: remote %q: credentials, query and fragment do not belong in the URL", raw)
	}
	if err := s3utils.CheckValidBucketNameStrict(u.Host); err != nil {
		return "", "", fmt.Errorf("blob: remote %q: bucket: %w", raw, err)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := ValidKey(prefix); err != nil {
			return "", "", fmt.Errorf("blob: remote %q: prefix: %w", raw, err)
		}
		prefix += "/"
	}
	return u.Host, prefix, nil
}

// NewS3 opens the bucket and prefix that rawURL ("s3://BUCKET/PREFIX")
// names. It fails when the bucket does not exist, when no credentials are
// found, and (unless opts.ReadOnly) when the server does not honour
// conditional writes: it writes a probe object twice under
// PREFIX/.blob-probe/ and removes it.
func NewS3(ctx context.Context, rawURL string, opts S3Options) (*S3, error) {
	bucket, prefix, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	host, secure, err := parseEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	creds, err := loadCredentials(ctx, opts)
	if err != nil {
		return nil, err
	}
	mo := &minio.Options{Creds: creds, Secure: secure, Region: opts.Region}
	if opts.Endpoint != "" {
		mo.BucketLookup = minio.BucketLookupPath // gateways rarely serve virtual hosts
	}
	client, err := minio.New(host, mo)
	if err != nil {
		return nil, fmt.Errorf("blob: remote %s at %s: %w", rawURL, host, err)
	}
	s := &S3{client: client, core: minio.Core{Client: client}, bucket: bucket, prefix: prefix, url: rawURL, opts: opts}
	ok, err := client.BucketExists(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("blob: remote %s at %s: %w", rawURL, host, err)
	}
	if !ok {
		return nil, fmt.Errorf("blob: remote %s at %s: bucket %q does not exist", rawURL, host, bucket)
	}
	if !opts.ReadOnly {
		if err := s.probeConditionalWrites(ctx); err != nil {
			return nil, fmt.Errorf("blob: remote %s at %s: %w", rawURL, host, err)
		}
	}
	return s, nil
}

// URL returns the s3:// URL the store was opened with.
func (s *S3) URL() string { return s.url }

// Options returns the options the store was opened with (no secrets), so
// another process can open the same store.
func (s *S3) Options() S3Options { return s.opts }

// parseEndpoint turns the endpoint URL into minio's host and TLS flag.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "s3.amazonaws.com", true, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("blob: endpoint %q: %w", endpoint, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("blob: endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT]", endpoint)
	case u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "":
		return "", false, fmt.Errorf("blob: endpoint %q: only a scheme, host and port are allowed", endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// loadCredentials reads the keys from the file the options name, else from
// the environment, and fails now rather than at the first request.
func loadCredentials(ctx context.Context, opts S3Options) (*credentials.Credentials, error) {
	var c *credentials.Credentials
	where := "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	if opts.CredentialsFile != "" {
		profile := opts.Profile
		if profile == "" {
			profile = "default"
		}
		if _, err := os.Stat(opts.CredentialsFile); err != nil {
			return nil, fmt.Errorf("blob: credentials file: %w", err)
		}
		c = credentials.NewFileAWSCredentials(opts.CredentialsFile, profile)
		where = fmt.Sprintf("profile %q of %s", profile, opts.CredentialsFile)
	} else {
		c = credentials.NewEnvAWS()
	}
	v, err := c.GetWithContext(&credentials.CredContext{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("blob: credentials from %s: %w", where, err)
	}
	if v.AccessKeyID == "" || v.SecretAccessKey == "" {
		return nil, fmt.Errorf("blob: no S3 credentials: set %s", where)
	}
	return c, nil
}

// probeConditionalWrites writes one object twice with If-None-Match: *;
// the second write must be refused with 412.
func (s *S3) probeConditionalWrites(ctx context.Context) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	key := s.prefix + ".blob-probe/" + hex.EncodeToString(rnd[:])
	defer func() {
		_ = s.client.RemoveObject(context.WithoutCancel(ctx), s.bucket, key, minio.RemoveObjectOptions{})
	}()
	for i := range 2 {
		created, err := s.putConditional(ctx, key, bytes.NewReader(rnd[:]), int64(len(rnd)))
		switch {
		case err != nil:
			return fmt.Errorf("%w: probe write %d: %v", ErrNoConditionalWrites, i+1, err)
		case i == 0 && !created:
			return fmt.Errorf("%w: the first write of a new probe object was refused", ErrNoConditionalWrites)
		case i == 1 && created:
			return fmt.Errorf("%w: a second write of the probe object succeeded", ErrNoConditionalWrites)
		}
	}
	return nil
}

// key maps a valid key to the object name in the bucket.
func (s *S3) key(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// writable refuses writes to a read-only store.
func (s *S3) writable(key string) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("blob: %s: %w", key, ErrReadOnly)
	}
	return nil
}

// Put implements Store. An unknown size streams as a multipart upload of
// partSize parts, so memory stays bounded whatever the length.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	name, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.writable(key); err != nil {
		return err
	}
	if size < -1 {
		return fmt.Errorf("blob: put %s: size %d", key, size)
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: partSize, NumThreads: 1,
		DisableContentSha256: size == 0}
	if size >= 0 {
		if r, err = exactBody(r, size); err != nil {
			return fmt.Errorf("blob: put %s: %w", key, err)
		}
	}
	if _, err := s.client.PutObject(ctx, s.bucket, name, r, size, opts); err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return nil
}

// PutIfAbsent implements Store with one conditional PUT. A body of
// unknown size is spooled to a temporary file first, since a conditional
// write cannot be a multipart stream.
func (s *S3) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (bool, error) {
	name, err := s.key(key)
	if err != nil {
		return false, err
	}
	if err := s.writable(key); err != nil {
		return false, err
	}
	if size < 0 {
		f, n, err := spool(r)
		if err != nil {
			return false, fmt.Errorf("blob: put-if-absent %s: %w", key, err)
		}
		defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
		r, size = f, n
	}
	created, err := s.putConditional(ctx, name, r, size)
	if err != nil {
		return false, fmt.Errorf("blob: put-if-absent %s: %w", key, err)
	}
	return created, nil
}

// putConditional PUTs with If-None-Match: * and reports whether the object
// was created; 412 means another writer's object is there. A 409 (a
// concurrent conditional write still in progress, on AWS) is retried when
// the body can be rewound.
func (s *S3) putConditional(ctx context.Context, name string, r io.Reader, size int64) (bool, error) {
	seeker, _ := r.(io.Seeker)
	for attempt := 0; ; attempt++ {
		body, err := exactBody(r, size)
		if err != nil {
			return false, err
		}
		opts := minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true,
			DisableContentSha256: size == 0}
		opts.SetMatchETagExcept("*")
		_, err = s.client.PutObject(ctx, s.bucket, name, body, size, opts)
		if err == nil {
			return true, nil
		}
		resp := minio.ToErrorResponse(err)
		switch {
		case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == "PreconditionFailed":
			return false, nil
		case resp.StatusCode == http.StatusConflict && seeker != nil && attempt < 5:
			if _, serr := seeker.Seek(0, io.SeekStart); serr != nil {
				return false, err
			}
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
			}
		default:
			return false, err
		}
	}
}

// Get implements Store. The request is made here, so a missing key is
// reported now.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	name, err := s.key(key)
	if err != nil {
		return nil, err
	}
	rc, _, _, err := s.core.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.mapErr("get", key, err)
	}
	return rc, nil
}

// GetRange implements Store with one ranged GET. The server's 416 for a
// range starting at or past the end means the object exists: it reads as
// empty.
func (s *S3) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	name, err := s.key(key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(key, off, n); err != nil {
		return nil, err
	}
	if n == 0 {
		if _, err := s.Stat(ctx, key); err != nil {
			return nil, err
		}
		return emptyReader(), nil
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, fmt.Errorf("blob: get %s range %d+%d: %w", key, off, n, err)
	}
	rc, _, _, err := s.core.GetObject(ctx, s.bucket, name, opts)
	if err != nil {
		resp := minio.ToErrorResponse(err)
		if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable || resp.Code == "InvalidRange" {
			return emptyReader(), nil
		}
		return nil, s.mapErr("get", key, err)
	}
	// A server that ignores Range answers 200 with the whole object; the
	// limit keeps the contract either way.
	return limitCloser{io.LimitReader(rc, n), rc}, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (int64, error) {
	name, err := s.key(key)
	if err != nil {
		return 0, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return 0, s.mapErr("stat", key, err)
	}
	return info.Size, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.writable(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		if err := s.mapErr("delete", key, err); errors.Is(err, ErrNotFound) {
			return nil
		}
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// List implements Store. The client pages through ListObjectsV2 (1000
// keys a page); objects whose names are not valid keys (the probe, or
// objects another tool put under the prefix) are skipped.
func (s *S3) List(ctx context.Context, prefix string, fn func(key string, size int64) error) error {
	return s.ListInfo(ctx, prefix, func(o Info) error { return fn(o.Key, o.Size) })
}

// ListInfo implements Store: List with each object's LastModified, as the
// listing reports it (no request per object).
func (s *S3) ListInfo(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := validPrefix(prefix); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the client's listing goroutine when fn fails
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return fmt.Errorf("blob: list %q: %w", prefix, obj.Err)
		}
		key := strings.TrimPrefix(obj.Key, s.prefix)
		if ValidKey(key) != nil {
			continue
		}
		if err := fn(Info{Key: key, Size: obj.Size, Modified: obj.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// mapErr turns the server's "no such key" into ErrNotFound and wraps the
// rest with the operation and key.
func (s *S3) mapErr(op, key string, err error) error {
	resp := minio.ToErrorResponse(err)
	if resp.Code == "NoSuchKey" || (resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket") {
		return notFound(key)
	}
	return fmt.Errorf("blob: %s %s: %w", op, key, err)
}

// spool copies r into an unlinked-on-close temporary file so its size is
// known and it can be re-read.
func spool(r io.Reader) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "blob-spool-*")
	if err != nil {
		return nil, 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, 0, err
	}
	return f, n, nil
}

// exactBody returns the request body for size bytes of r, checked by
// exactReader. An empty body must go out with "Content-Length: 0": the
// client's streaming signature (plain HTTP) sends a zero-length body
// chunked instead, which servers refuse, so callers turn it off for size 0
// (DisableContentSha256: there is no payload to sign).
func exactBody(r io.Reader, size int64) (io.Reader, error) {
	if size > 0 {
		return &exactReader{r: r, left: size}, nil
	}
	var b [1]byte
	if n, _ := io.ReadFull(r, b[:]); n > 0 {
		return nil, errors.New("the reader holds more bytes than the size given (0)")
	}
	return bytes.NewReader(nil), nil
}

// exactReader reads exactly left bytes from r and fails the upload when r
// is shorter or longer: the client stops reading at the declared size, so
// without it a longer body would be stored cut. The last bytes are only
// handed over once r is known to end there, because the client's full
// reads drop an error that comes with the final bytes.
type exactReader struct {
	r    io.Reader
	left int64
}

// Read implements io.Reader.
func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	if int64(n) == e.left {
		var b [1]byte
		if m, _ := io.ReadFull(e.r, b[:]); m > 0 {
			return 0, errors.New("the reader holds more bytes than the size given")
		}
		e.left = 0
		return n, io.EOF
	}
	e.left -= int64(n)
	if err == io.EOF {
		return n, fmt.Errorf("the reader ended %d bytes before the size given: %w", e.left, io.ErrUnexpectedEOF)
	}
	return n, err
}

// limitCloser limits a response body and closes it.
type limitCloser struct {
	io.Reader
	c io.Closer
}

// Close implements io.Closer.
func (l limitCloser) Close() error { return l.c.Close() }
