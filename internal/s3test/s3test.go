// Package s3test starts S3 servers for tests on 127.0.0.1: the real
// versitygw gateway when it is installed, else an in-process gofakes3. It is
// imported by tests only, so gofakes3 stays out of archivectl's build.
package s3test

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
)

// Bucket is the bucket every server here is created with.
const Bucket = "replay-test"

// Server is an S3 endpoint a test runs against, with the credentials file
// that opens it (an AWS credentials file, as a deployment hands them over).
type Server struct {
	Endpoint        string
	CredentialsFile string
	// Real is true for versitygw, false for the in-process fake.
	Real bool
	n    atomic.Int64
}

// URL returns a fresh s3:// URL under the test bucket, so tests sharing a
// server do not see each other's keys.
func (srv *Server) URL() string {
	return fmt.Sprintf("s3://%s/t%d", Bucket, srv.n.Add(1))
}

// Options returns the S3 options that reach the server.
func (srv *Server) Options() blob.S3Options {
	return blob.S3Options{Endpoint: srv.Endpoint, Region: "us-east-1", CredentialsFile: srv.CredentialsFile}
}

// NewStore returns a store under a fresh prefix of the test bucket.
func (srv *Server) NewStore(t testing.TB) blob.Store {
	t.Helper()
	url := srv.URL()
	s, err := blob.NewS3(context.Background(), url, srv.Options())
	if err != nil {
		t.Fatalf("NewS3(%s): %v", url, err)
	}
	return s
}

// Start returns versitygw when it is installed, else gofakes3; under CI a
// missing versitygw fails the test (.ci/run installs it). Outside CI,
// REPLAY_S3=gofakes3 picks the fake even when versitygw is there.
func Start(t testing.TB) *Server {
	t.Helper()
	if os.Getenv("CI") != "" || (findVersitygw() != "" && os.Getenv("REPLAY_S3") != "gofakes3") {
		return StartVersitygw(t)
	}
	return StartGofakes3(t)
}

// RandomKeys makes throwaway credentials for a local server and writes
// them to an AWS credentials file; nothing else holds them.
func RandomKeys(t testing.TB) (access, secret, file string) {
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

// StartGofakes3 serves an in-memory gofakes3 on 127.0.0.1 for the test.
func StartGofakes3(t testing.TB) *Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(decodeChunkedParts(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()))
	t.Cleanup(ts.Close)
	_, _, file := RandomKeys(t)
	return &Server{Endpoint: ts.URL, CredentialsFile: file}
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

// versitygwPath finds the versitygw binary: $REPLAY_VERSITYGW, else PATH,
// else the CI tools cache. Missing, the test skips locally and fails under
// CI, where .ci/run installs it.
func versitygwPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("REPLAY_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("REPLAY_VERSITYGW=%s: %v", p, err)
		}
	}
	if p := findVersitygw(); p != "" {
		return p
	}
	msg := "versitygw not found (REPLAY_VERSITYGW, PATH, ~/.cache/replay-ci/bin): " +
		"go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// findVersitygw returns the versitygw binary's path, or "".
func findVersitygw() string {
	if p := os.Getenv("REPLAY_VERSITYGW"); p != "" {
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

// StartVersitygw runs the real S3 gateway versitygw over a temporary
// directory, on 127.0.0.1 only, with throwaway root keys passed through
// its environment (not its command line), and creates the test bucket.
func StartVersitygw(t testing.TB) *Server {
	t.Helper()
	bin := versitygwPath(t)
	access, secret, credsFile := RandomKeys(t)
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
		srv := &Server{Endpoint: "http://" + addr, CredentialsFile: credsFile, Real: true}
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
	if err := c.MakeBucket(ctx, Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
}
