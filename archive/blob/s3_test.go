package blob_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/archive/blob/blobtest"
	"github.com/replayarchive/replay/internal/s3test"
)

const testBucket = s3test.Bucket

func TestS3ContractGofakes3(t *testing.T) {
	srv := s3test.StartGofakes3(t)
	blobtest.RunWith(t, func(t *testing.T) blob.Store { return srv.NewStore(t) }, blobtest.Options{ServerInProcess: true})
}

func TestS3ContractVersitygw(t *testing.T) {
	srv := s3test.StartVersitygw(t)
	blobtest.Run(t, func(t *testing.T) blob.Store { return srv.NewStore(t) })
}

// TestS3Configuration checks what NewS3 refuses up front: a missing
// bucket, missing credentials, a bad endpoint; and that a read-only store
// reads but does not write.
func TestS3Configuration(t *testing.T) {
	srv := s3test.StartGofakes3(t)
	ctx := t.Context()
	opts := blob.S3Options{Endpoint: srv.Endpoint, CredentialsFile: srv.CredentialsFile}
	if _, err := blob.NewS3(ctx, "s3://no-such-bucket/x", opts); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing bucket: %v", err)
	}
	for _, ep := range []string{"127.0.0.1:9000", "ftp://host", "http://host/path", "http://user:pw@host"} {
		if _, err := blob.NewS3(ctx, "s3://"+testBucket, blob.S3Options{Endpoint: ep, CredentialsFile: srv.CredentialsFile}); err == nil {
			t.Errorf("endpoint %q accepted", ep)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := blob.NewS3(ctx, "s3://"+testBucket, blob.S3Options{Endpoint: srv.Endpoint}); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: %v", err)
	}
	if _, err := blob.NewS3(ctx, "s3://"+testBucket, blob.S3Options{Endpoint: srv.Endpoint, CredentialsFile: filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Error("a missing credentials file was accepted")
	}
	// The environment works as well as a file.
	t.Setenv("AWS_ACCESS_KEY_ID", "envkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	w, err := blob.NewS3(ctx, "s3://"+testBucket+"/ro", blob.S3Options{Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatalf("credentials from the environment: %v", err)
	}
	if err := w.Put(ctx, "k", strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	ro, err := blob.NewS3(ctx, "s3://"+testBucket+"/ro", blob.S3Options{Endpoint: srv.Endpoint, ReadOnly: true})
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
	_, _, file := s3test.RandomKeys(t)
	_, err := blob.NewS3(t.Context(), "s3://"+testBucket+"/x", blob.S3Options{Endpoint: ts.URL, CredentialsFile: file})
	if !errors.Is(err, blob.ErrNoConditionalWrites) {
		t.Fatalf("NewS3 against a server ignoring If-None-Match = %v, want ErrNoConditionalWrites", err)
	}
	// Read-only stores do not need conditional writes.
	if _, err := blob.NewS3(t.Context(), "s3://"+testBucket+"/x", blob.S3Options{Endpoint: ts.URL, CredentialsFile: file, ReadOnly: true}); err != nil {
		t.Fatalf("read-only NewS3: %v", err)
	}
}
