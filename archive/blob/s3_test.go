package blob_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/archive/blob/blobtest"
)

const testBucket = "replay-test"

// s3Server is an S3 endpoint a test runs against, with the credentials
// file that opens it.
type s3Server struct {
	endpoint  string
	credsFile string
	n         atomic.Int64
}

// newStore returns a store under a fresh prefix of the test bucket.
func (srv *s3Server) newStore(t *testing.T) blob.Store {
	t.Helper()
	url := fmt.Sprintf("s3://%s/t%d", testBucket, srv.n.Add(1))
	s, err := blob.NewS3(t.Context(), url, blob.S3Options{Endpoint: srv.endpoint, Region: "us-east-1", CredentialsFile: srv.credsFile})
	if err != nil {
		t.Fatalf("NewS3(%s): %v", url, err)
	}
	return s
}

// randomKeys makes throwaway credentials for a local server and writes
// them to an AWS credentials file, the way a deployment would hand them
// over; nothing else holds them.
func randomKeys(t testing.TB) (access, secret, file string) {
	t.Helper()
	var b [24]byte
	_, _ = rand.Read(b[:])
	access, secret = "test"+hex.EncodeToString(b[:6]), hex.EncodeToString(b[6:])
	file = filepath.Join(t.TempDir(), "credentials")
	body := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", access, secret)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return access, secret, file
}

// startGofakes3 serves an in-memory gofakes3 on 127.0.0.1 for the test.
func startGofakes3(t *testing.T) *s3Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(decodeChunkedParts(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()))
	t.Cleanup(ts.Close)
	_, _, file := randomKeys(t)
	return &s3Server{endpoint: ts.URL, credsFile: file}
}

// decodeChunkedParts works around a gofakes3 v1.2.0 gap: it decodes the
// aws-chunked framing of a streaming-signed PutObject but stores an
// UploadPart body with its framing, so multipart objects read back longer.
// Real servers (versitygw below) decode both; this strips the framing of
// parts before the fake sees them. It checks no signature, like gofakes3.
func decodeChunkedParts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Has("partNumber") &&
			r.Header.Get("X-Amz-Content-Sha256") == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" {
			n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
			if err != nil {
				http.Error(w, "bad X-Amz-Decoded-Content-Length", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(&chunkDecoder{r: bufio.NewReader(r.Body)})
			r.ContentLength = n
			r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
			r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		}
		next.ServeHTTP(w, r)
	})
}

// chunkDecoder reads the payload out of "SIZE;chunk-signature=SIG\r\n
// DATA\r\n" frames ending with a zero-size frame.
type chunkDecoder struct {
	r    *bufio.Reader
	left int64
	done bool
}

// Read implements io.Reader.
func (c *chunkDecoder) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("chunk header: %w", err)
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("chunk header %q", line)
		}
		if n == 0 {
			c.done = true
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left == 0 && err == nil {
		if _, err := c.r.Discard(2); err != nil { // the frame's closing CRLF
			return n, err
		}
	}
	return n, err
}

func TestS3ContractGofakes3(t *testing.T) {
	srv := startGofakes3(t)
	blobtest.RunWith(t, srv.newStore, blobtest.Options{ServerInProcess: true})
}

// versitygwPath finds the versitygw binary: $REPLAY_VERSITYGW, else PATH,
// else the CI tools cache. Missing, the test skips locally and fails under
// CI, where .ci/run installs it.
func versitygwPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("REPLAY_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("REPLAY_VERSITYGW=%s: %v", p, err)
		}
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "replay-ci", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "versitygw not found (REPLAY_VERSITYGW, PATH, ~/.cache/replay-ci/bin): " +
		"go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startVersitygw runs the real S3 gateway versitygw over a temporary
// directory, on 127.0.0.1 only, with throwaway root keys passed through
// its environment (not its command line), and creates the test bucket.
func startVersitygw(t testing.TB) *s3Server {
	t.Helper()
	bin := versitygwPath(t)
	access, secret, credsFile := randomKeys(t)
	dir := t.TempDir()
	var lastErr error
	for range 3 { // the free port may be taken between asking and listening
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cmd := exec.Command(bin, "--port", addr, "--health", "/health", "posix", dir)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+access, "ROOT_SECRET_KEY="+secret)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		if err := waitHealthy("http://"+addr+"/health", exited); err != nil {
			stop()
			lastErr = fmt.Errorf("%v; output:\n%s", err, out.String())
			continue
		}
		t.Cleanup(stop)
		srv := &s3Server{endpoint: "http://" + addr, credsFile: credsFile}
		makeBucket(t, addr, access, secret)
		return srv
	}
	t.Fatalf("versitygw did not start: %v", lastErr)
	return nil
}

// waitHealthy polls the health endpoint until it answers 200, the process
// exits, or 30 s pass.
func waitHealthy(url string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("versitygw exited: %v", err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("versitygw not healthy after 30 s")
}

// makeBucket creates the test bucket with a plain client.
func makeBucket(t testing.TB, addr, access, secret string) {
	t.Helper()
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, testBucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
}

func TestS3ContractVersitygw(t *testing.T) {
	srv := startVersitygw(t)
	blobtest.Run(t, srv.newStore)
}

// TestS3Configuration checks what NewS3 refuses up front: a missing
// bucket, missing credentials, a bad endpoint; and that a read-only store
// reads but does not write.
func TestS3Configuration(t *testing.T) {
	srv := startGofakes3(t)
	ctx := t.Context()
	opts := blob.S3Options{Endpoint: srv.endpoint, CredentialsFile: srv.credsFile}
	if _, err := blob.NewS3(ctx, "s3://no-such-bucket/x", opts); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing bucket: %v", err)
	}
	for _, ep := range []string{"127.0.0.1:9000", "ftp://host", "http://host/path", "http://user:pw@host"} {
		if _, err := blob.NewS3(ctx, "s3://"+testBucket, blob.S3Options{Endpoint: ep, CredentialsFile: srv.credsFile}); err == nil {
			t.Errorf("endpoint %q accepted", ep)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := blob.NewS3(ctx, "s3://"+testBucket, blob.S3Options{Endpoint: srv.endpoint}); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: %v", err)
	}
	if _, err := blob.NewS3(ctx, "s3://"+testBucket, blob.S3Options{Endpoint: srv.endpoint, CredentialsFile: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Error("a missing credentials file was accepted")
	}
	// The environment works as well as a file.
	t.Setenv("AWS_ACCESS_KEY_ID", "envkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	w, err := blob.NewS3(ctx, "s3://"+testBucket+"/ro", blob.S3Options{Endpoint: srv.endpoint})
	if err != nil {
		t.Fatalf("credentials from the environment: %v", err)
	}
	if err := w.Put(ctx, "k", strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	ro, err := blob.NewS3(ctx, "s3://"+testBucket+"/ro", blob.S3Options{Endpoint: srv.endpoint, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if size, err := ro.Stat(ctx, "k"); err != nil || size != 1 {
		t.Errorf("read-only Stat = %d, %v", size, err)
	}
	if err := ro.Put(ctx, "k2", strings.NewReader("v"), 1); !errors.Is(err, blob.ErrReadOnly) {
		t.Errorf("read-only Put = %v, want ErrReadOnly", err)
	}
	if _, err := ro.PutIfAbsent(ctx, "k2", strings.NewReader("v"), 1); !errors.Is(err, blob.ErrReadOnly) {
		t.Errorf("read-only PutIfAbsent = %v, want ErrReadOnly", err)
	}
	if err := ro.Delete(ctx, "k"); !errors.Is(err, blob.ErrReadOnly) {
		t.Errorf("read-only Delete = %v, want ErrReadOnly", err)
	}
	// The options hold no secret.
	if s := fmt.Sprintf("%+v", w.Options()); strings.Contains(s, "envsecret") {
		t.Errorf("options hold the secret: %s", s)
	}
}

// TestS3RefusesServerWithoutConditionalWrites puts a proxy in front of
// gofakes3 that drops If-None-Match, as a server without conditional
// writes would ignore it: NewS3 must refuse the store rather than race.
func TestS3RefusesServerWithoutConditionalWrites(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("If-None-Match") // gofakes3 checks no signature, so the request still passes
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	_, _, file := randomKeys(t)
	_, err := blob.NewS3(t.Context(), "s3://"+testBucket+"/x", blob.S3Options{Endpoint: ts.URL, CredentialsFile: file})
	if !errors.Is(err, blob.ErrNoConditionalWrites) {
		t.Fatalf("NewS3 against a server ignoring If-None-Match = %v, want ErrNoConditionalWrites", err)
	}
	// Read-only stores do not need conditional writes.
	if _, err := blob.NewS3(t.Context(), "s3://"+testBucket+"/x", blob.S3Options{Endpoint: ts.URL, CredentialsFile: file, ReadOnly: true}); err != nil {
		t.Fatalf("read-only NewS3: %v", err)
	}
}
