// Package blobtest is the contract every blob.Store must keep, as a test
// suite: round trips, ranges, missing keys, listing, overwrites, a large
// streamed object in bounded memory, and put-if-absent raced by several
// processes. The Dir and S3 stores run it; so must any later store, so
// that the archive can treat them alike.
//
// The race runs child processes: the test binary re-executes itself, so a
// package using Run must call Main from its TestMain.
package blobtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay/archive/blob"
	"github.com/replayarchive/replay/internal/memtest"
)

// Options tunes the suite for one store.
type Options struct {
	// ServerInProcess says the store's server runs in the test process (an
	// in-memory fake), so its memory is not the client's: the large-object
	// test then checks the bytes but not the memory bound.
	ServerInProcess bool
	// LargeSize is the size of the streamed large object; 0 means 64 MiB.
	LargeSize int64
	// ManyKeys is how many keys the listing test writes; 0 means 1100, one
	// more page than S3's 1000-key listing pages.
	ManyKeys int
}

// Run runs the contract against stores from newStore, which must return an
// empty store (a fresh directory, or a fresh prefix of a bucket) each call.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	RunWith(t, newStore, Options{})
}

// RunWith is Run with options.
func RunWith(t *testing.T, newStore func(t *testing.T) blob.Store, o Options) {
	if o.LargeSize == 0 {
		o.LargeSize = 64 << 20
	}
	if o.ManyKeys == 0 {
		o.ManyKeys = 1100
	}
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("Ranges", func(t *testing.T) { testRanges(t, newStore(t)) })
	t.Run("Missing", func(t *testing.T) { testMissing(t, newStore(t)) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, newStore(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, newStore(t)) })
	t.Run("SizeMismatch", func(t *testing.T) { testSizeMismatch(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("ListInfo", func(t *testing.T) { testListInfo(t, newStore(t)) })
	t.Run("ListMany", func(t *testing.T) { testListMany(t, newStore(t), o.ManyKeys) })
	t.Run("PutIfAbsent", func(t *testing.T) { testPutIfAbsent(t, newStore(t)) })
	t.Run("PutIfAbsentGoroutines", func(t *testing.T) { testPutIfAbsentGoroutines(t, newStore(t)) })
	t.Run("PutIfAbsentProcesses", func(t *testing.T) { testPutIfAbsentProcesses(t, newStore(t)) })
	t.Run("Large", func(t *testing.T) { testLarge(t, newStore(t), o) })
}

// put writes data at key or fails the test.
func put(t *testing.T, s blob.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%s): %v", key, err)
	}
}

// readAll reads and closes rc, failing the test on error.
func readAll(t *testing.T, what string, rc io.ReadCloser, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: read: %v", what, err)
	}
	return b
}

// get reads the whole object at key.
func get(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	return readAll(t, "Get("+key+")", rc, err)
}

// pattern returns n deterministic bytes that differ per seed, so a wrong
// offset or a swapped object shows.
func pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func testRoundTrip(t *testing.T, s blob.Store) {
	ctx := t.Context()
	for _, n := range []int{0, 1, 4095, 100_000} {
		key := fmt.Sprintf("rt/obj-%d", n)
		data := pattern(byte(n), n)
		put(t, s, key, data)
		if got := get(t, s, key); !bytes.Equal(got, data) {
			t.Fatalf("Get(%s) = %d bytes, want the %d put", key, len(got), n)
		}
		size, err := s.Stat(ctx, key)
		if err != nil || size != int64(n) {
			t.Fatalf("Stat(%s) = %d, %v; want %d", key, size, err, n)
		}
	}
	// Unknown size streams.
	data := pattern(7, 300_000)
	if err := s.Put(ctx, "rt/streamed", io.MultiReader(bytes.NewReader(data[:1000]), bytes.NewReader(data[1000:])), -1); err != nil {
		t.Fatalf("Put(size -1): %v", err)
	}
	if got := get(t, s, "rt/streamed"); !bytes.Equal(got, data) {
		t.Fatalf("streamed object read back as %d bytes, want %d", len(got), len(data))
	}
	if err := s.Delete(ctx, "rt/streamed"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(ctx, "rt/streamed"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat after Delete: %v, want ErrNotFound", err)
	}
}

func testRanges(t *testing.T, s blob.Store) {
	const size = 10_000
	data := pattern(3, size)
	put(t, s, "r/obj", data)
	put(t, s, "r/empty", nil)
	cases := []struct {
		name   string
		off, n int64
		want   []byte
	}{
		{"start", 0, 4096, data[:4096]},
		{"middle", 1234, 5000, data[1234:6234]},
		{"end", size - 100, 100, data[size-100:]},
		{"one byte", 5000, 1, data[5000:5001]},
		{"past end", size - 10, 100, data[size-10:]},
		{"whole", 0, size, data},
		{"at end", size, 10, nil},
		{"beyond end", size + 1000, 10, nil},
		{"zero length", 100, 0, nil},
	}
	for _, c := range cases {
		rc, err := s.GetRange(t.Context(), "r/obj", c.off, c.n)
		got := readAll(t, fmt.Sprintf("GetRange %s (%d+%d)", c.name, c.off, c.n), rc, err)
		if !bytes.Equal(got, c.want) {
			t.Errorf("GetRange %s (%d+%d) = %d bytes, want %d", c.name, c.off, c.n, len(got), len(c.want))
		}
	}
	rc, err := s.GetRange(t.Context(), "r/empty", 0, 10)
	if got := readAll(t, "GetRange of an empty object", rc, err); len(got) != 0 {
		t.Errorf("GetRange of an empty object = %d bytes", len(got))
	}
	for _, bad := range [][2]int64{{-1, 10}, {0, -1}} {
		if rc, err := s.GetRange(t.Context(), "r/obj", bad[0], bad[1]); err == nil {
			rc.Close()
			t.Errorf("GetRange(%d, %d) succeeded, want an error", bad[0], bad[1])
		}
	}
}

func testMissing(t *testing.T, s blob.Store) {
	ctx := t.Context()
	put(t, s, "m/present", []byte("x"))
	for _, key := range []string{"m/absent", "m/present/child", "nothing/here"} {
		if rc, err := s.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("Get(%s) = %v, want ErrNotFound", key, err)
		}
		if rc, err := s.GetRange(ctx, key, 0, 10); !errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("GetRange(%s) = %v, want ErrNotFound", key, err)
		}
		if rc, err := s.GetRange(ctx, key, 0, 0); !errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("GetRange(%s, 0, 0) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%s) = %v, want ErrNotFound", key, err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%s) of a missing key = %v, want nil", key, err)
		}
	}
	// "m" is only a prefix of m/present, not an object.
	if _, err := s.Stat(ctx, "m"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat of a prefix = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "m"); err != nil {
		t.Errorf("Delete of a prefix = %v", err)
	}
	if got := get(t, s, "m/present"); string(got) != "x" {
		t.Errorf("m/present after deleting its prefix = %q", got)
	}
}

func testKeys(t *testing.T, s blob.Store) {
	ctx := t.Context()
	bad := []string{"", "/abs", "a//b", "a/", "../x", "a/../b", "a/./b", ".", "..", "a/.hidden", "a\\b", "a\x00b"}
	for _, key := range bad {
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
			t.Errorf("Put(%q) succeeded, want an invalid-key error", key)
		}
		if _, err := s.PutIfAbsent(ctx, key, strings.NewReader("x"), 1); err == nil {
			t.Errorf("PutIfAbsent(%q) succeeded, want an invalid-key error", key)
		}
		if rc, err := s.Get(ctx, key); err == nil || errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("Get(%q) = %v, want an invalid-key error", key, err)
		}
		if _, err := s.Stat(ctx, key); err == nil || errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want an invalid-key error", key, err)
		}
		if err := s.Delete(ctx, key); err == nil {
			t.Errorf("Delete(%q) succeeded, want an invalid-key error", key)
		}
	}
	if err := s.List(ctx, "../", func(string, int64) error { return nil }); err == nil {
		t.Error("List(\"../\") succeeded, want an invalid-prefix error")
	}
	good := []string{"a", "rec/2026-01/0b5f6e2a-1c1d-4c3e-9f00-123456789abc", "x y/ü-é_~+=,;@", "a.b/c..d"}
	for _, key := range good {
		put(t, s, key, []byte(key))
		if got := get(t, s, key); string(got) != key {
			t.Errorf("Get(%q) = %q", key, got)
		}
	}
}

func testOverwrite(t *testing.T, s blob.Store) {
	ctx := t.Context()
	put(t, s, "o/k", pattern(1, 5000))
	put(t, s, "o/k", []byte("short"))
	if got := get(t, s, "o/k"); string(got) != "short" {
		t.Fatalf("after overwrite Get = %d bytes, want the 5 of the second Put", len(got))
	}
	if size, err := s.Stat(ctx, "o/k"); err != nil || size != 5 {
		t.Fatalf("Stat after overwrite = %d, %v; want 5", size, err)
	}
	created, err := s.PutIfAbsent(ctx, "o/k", strings.NewReader("third"), 5)
	if err != nil || created {
		t.Fatalf("PutIfAbsent over an object = %v, %v; want false, nil", created, err)
	}
	if got := get(t, s, "o/k"); string(got) != "short" {
		t.Fatalf("PutIfAbsent changed an existing object to %q", got)
	}
	// Put replaces what PutIfAbsent wrote.
	if created, err := s.PutIfAbsent(ctx, "o/p", strings.NewReader("first"), 5); err != nil || !created {
		t.Fatalf("PutIfAbsent of a new key = %v, %v", created, err)
	}
	put(t, s, "o/p", []byte("second"))
	if got := get(t, s, "o/p"); string(got) != "second" {
		t.Fatalf("Put over a PutIfAbsent object left %q", got)
	}
}

func testSizeMismatch(t *testing.T, s blob.Store) {
	ctx := t.Context()
	if err := s.Put(ctx, "sz/short", strings.NewReader("abc"), 10); err == nil {
		t.Error("Put with a size larger than the reader succeeded")
	}
	if err := s.Put(ctx, "sz/long", strings.NewReader("abcdefghij"), 3); err == nil {
		t.Error("Put with a size smaller than the reader succeeded")
	}
	for _, key := range []string{"sz/short", "sz/long"} {
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("after a failed Put, Stat(%s) = %v, want ErrNotFound", key, err)
		}
	}
	var keys []string
	if err := s.List(ctx, "", func(k string, _ int64) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("failed Puts left %q", keys)
	}
}

// list collects the listing of prefix.
func list(t *testing.T, s blob.Store, prefix string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	var order []string
	err := s.List(t.Context(), prefix, func(k string, size int64) error {
		if _, dup := got[k]; dup {
			return fmt.Errorf("key %s listed twice", k)
		}
		got[k] = size
		order = append(order, k)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	if !slices.IsSorted(order) {
		t.Fatalf("List(%q) not in key order: %q", prefix, order)
	}
	return got
}

func testList(t *testing.T, s blob.Store) {
	keys := []string{
		"rec/2026-01/a", "rec/2026-01/b", "rec/2026-02/a", "rec/2026-02/sub/deep",
		"rec/2026-1x", "rec.other", "rec0", "manifests/a", "manifests/b", "top",
	}
	for i, k := range keys {
		put(t, s, k, pattern(byte(i), i+1))
	}
	cases := map[string][]string{
		"":             keys,
		"rec/":         keys[:5],
		"rec/2026-0":   keys[:4],
		"rec/2026-01/": keys[:2],
		"rec/2026-02":  keys[2:4],
		"rec":          keys[:7],
		"manifests/":   keys[7:9],
		"manifests/a":  keys[7:8],
		"top":          keys[9:],
		"nothing/":     nil,
		"rec/2026-03/": nil,
	}
	for prefix, want := range cases {
		got := list(t, s, prefix)
		if len(got) != len(want) {
			t.Errorf("List(%q) = %d keys %v, want %q", prefix, len(got), got, want)
			continue
		}
		for _, k := range want {
			i := slices.Index(keys, k)
			if size, ok := got[k]; !ok || size != int64(i+1) {
				t.Errorf("List(%q): %s size %d (listed %v), want %d", prefix, k, size, ok, i+1)
			}
		}
	}
	// An error from fn stops the listing and comes back.
	stop := errors.New("stop")
	calls := 0
	err := s.List(t.Context(), "", func(string, int64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("List with a failing fn = %v after %d calls, want stop after 1", err, calls)
	}
	// Deleted keys leave the listing.
	if err := s.Delete(t.Context(), "rec/2026-02/sub/deep"); err != nil {
		t.Fatal(err)
	}
	if got := list(t, s, "rec/2026-02/"); len(got) != 1 {
		t.Errorf("after Delete, List(rec/2026-02/) = %v, want only rec/2026-02/a", got)
	}
}

// testListInfo: ListInfo lists what List lists, each object with a
// modification time from when it was written (the store's clock, on this
// machine for every store the suite runs; S3 listings have whole seconds),
// and a rewrite moves it forward.
func testListInfo(t *testing.T, s blob.Store) {
	const slack = 2 * time.Second
	before := time.Now()
	keys := []string{"m/a", "m/b/c", "m/d", "n"}
	for i, k := range keys {
		put(t, s, k, pattern(byte(i), 10*i+1))
	}
	after := time.Now()
	infos := func(prefix string) map[string]blob.Info {
		got := map[string]blob.Info{}
		var order []string
		err := s.ListInfo(t.Context(), prefix, func(o blob.Info) error {
			got[o.Key] = o
			order = append(order, o.Key)
			return nil
		})
		if err != nil {
			t.Fatalf("ListInfo(%q): %v", prefix, err)
		}
		if !slices.IsSorted(order) {
			t.Fatalf("ListInfo(%q) not in key order: %q", prefix, order)
		}
		return got
	}
	got := infos("m/")
	if want := list(t, s, "m/"); len(got) != len(want) || len(got) != 3 {
		t.Fatalf("ListInfo(m/) = %v, List(m/) = %v, want the 3 keys under m/", got, want)
	}
	for i, k := range keys[:3] {
		o := got[k]
		if o.Size != int64(10*i+1) {
			t.Errorf("ListInfo: %s size %d, want %d", k, o.Size, 10*i+1)
		}
		if o.Modified.Before(before.Add(-slack)) || o.Modified.After(after.Add(slack)) {
			t.Errorf("ListInfo: %s modified %s, written between %s and %s", k, o.Modified, before, after)
		}
	}
	// A rewrite a little later is listed as modified later.
	time.Sleep(slack)
	put(t, s, "m/a", []byte("again"))
	if o := infos("m/a")["m/a"]; !o.Modified.After(got["m/a"].Modified) || o.Size != 5 {
		t.Errorf("rewritten m/a listed as %+v, first written %s", o, got["m/a"].Modified)
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.ListInfo(t.Context(), "", func(blob.Info) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ListInfo with a failing fn = %v after %d calls, want stop after 1", err, calls)
	}
}

func testListMany(t *testing.T, s blob.Store, n int) {
	keys := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range keys {
				if err := s.Put(t.Context(), k, strings.NewReader(k), int64(len(k))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		keys <- fmt.Sprintf("many/%02d/%05d", i%7, i)
	}
	close(keys)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	put(t, s, "manz", []byte("outside"))
	got := list(t, s, "many/")
	if len(got) != n {
		t.Fatalf("List(many/) = %d keys, want %d", len(got), n)
	}
	for k, size := range got {
		if size != int64(len(k)) {
			t.Fatalf("List: %s has size %d, want %d", k, size, len(k))
		}
	}
	if got := list(t, s, "many/03/"); len(got) != (n-3+6)/7 {
		t.Fatalf("List(many/03/) = %d keys, want %d", len(got), (n-3+6)/7)
	}
}

func testPutIfAbsent(t *testing.T, s blob.Store) {
	ctx := t.Context()
	created, err := s.PutIfAbsent(ctx, "pia/k", strings.NewReader("one"), 3)
	if err != nil || !created {
		t.Fatalf("first PutIfAbsent = %v, %v; want true, nil", created, err)
	}
	created, err = s.PutIfAbsent(ctx, "pia/k", strings.NewReader("two"), 3)
	if err != nil || created {
		t.Fatalf("second PutIfAbsent = %v, %v; want false, nil", created, err)
	}
	if got := get(t, s, "pia/k"); string(got) != "one" {
		t.Fatalf("object = %q, want the first writer's", got)
	}
	// Unknown size works too.
	created, err = s.PutIfAbsent(ctx, "pia/streamed", io.MultiReader(strings.NewReader("ab"), strings.NewReader("cd")), -1)
	if err != nil || !created {
		t.Fatalf("PutIfAbsent(size -1) = %v, %v", created, err)
	}
	if got := get(t, s, "pia/streamed"); string(got) != "abcd" {
		t.Fatalf("streamed PutIfAbsent stored %q", got)
	}
	// A failed write does not occupy the key.
	if _, err := s.PutIfAbsent(ctx, "pia/bad", strings.NewReader("abc"), 10); err == nil {
		t.Fatal("PutIfAbsent with a wrong size succeeded")
	}
	if created, err := s.PutIfAbsent(ctx, "pia/bad", strings.NewReader("abc"), 3); err != nil || !created {
		t.Fatalf("PutIfAbsent after a failed one = %v, %v; want true", created, err)
	}
	// After Delete the key is free again.
	if err := s.Delete(ctx, "pia/k"); err != nil {
		t.Fatal(err)
	}
	if created, err := s.PutIfAbsent(ctx, "pia/k", strings.NewReader("three"), 5); err != nil || !created {
		t.Fatalf("PutIfAbsent after Delete = %v, %v; want true", created, err)
	}
}

func testPutIfAbsentGoroutines(t *testing.T, s blob.Store) {
	const writers, keys = 6, 10
	var wg sync.WaitGroup
	won := make([][]bool, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	for w := range writers {
		won[w] = make([]bool, keys)
		wg.Go(func() {
			<-start
			for k := range keys {
				data := []byte(fmt.Sprintf("writer %d", w))
				created, err := s.PutIfAbsent(t.Context(), fmt.Sprintf("g/%d", k), bytes.NewReader(data), int64(len(data)))
				if err != nil {
					errs[w] = err
					return
				}
				won[w][k] = created
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		var winners []int
		for w := range writers {
			if won[w][k] {
				winners = append(winners, w)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("key g/%d: writers %v won, want exactly one", k, winners)
		}
		if got, want := string(get(t, s, fmt.Sprintf("g/%d", k))), fmt.Sprintf("writer %d", winners[0]); got != want {
			t.Fatalf("key g/%d holds %q, but %q won", k, got, want)
		}
	}
}

// testLarge streams a large object of unknown size in and reads it back,
// checking that neither direction holds the object in memory.
func testLarge(t *testing.T, s blob.Store, o Options) {
	if testing.Short() {
		t.Skip("large object: not in -short")
	}
	ctx := t.Context()
	want, got := sha256.New(), sha256.New()
	var n int64
	var err error
	grown := memtest.Peak(func() {
		src := io.TeeReader(io.LimitReader(&patternReader{x: 99}, o.LargeSize), want)
		if err := s.Put(ctx, "large/obj", src, -1); err != nil {
			t.Fatalf("Put of %d bytes: %v", o.LargeSize, err)
		}
		var rc io.ReadCloser
		if rc, err = s.Get(ctx, "large/obj"); err != nil {
			t.Fatal(err)
		}
		n, err = io.Copy(got, rc)
		rc.Close()
	})
	if err != nil || n != o.LargeSize {
		t.Fatalf("Get read %d bytes, %v; want %d", n, err, o.LargeSize)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatal("large object read back differs")
	}
	t.Logf("large object %d MiB: heap grew by at most %d MiB", o.LargeSize>>20, grown>>20)
	if !o.ServerInProcess && grown > uint64(o.LargeSize/2) {
		t.Fatalf("heap grew by %d MiB for a %d MiB object: not streamed", grown>>20, o.LargeSize>>20)
	}
	if size, err := s.Stat(ctx, "large/obj"); err != nil || size != o.LargeSize {
		t.Fatalf("Stat = %d, %v; want %d", size, err, o.LargeSize)
	}
	tail := int64(4096)
	rc, err := s.GetRange(ctx, "large/obj", o.LargeSize-tail, 2*tail)
	b := readAll(t, "GetRange of the tail", rc, err)
	if int64(len(b)) != tail {
		t.Fatalf("tail range = %d bytes, want %d", len(b), tail)
	}
	if err := s.Delete(ctx, "large/obj"); err != nil {
		t.Fatal(err)
	}
}

// patternReader is an endless deterministic byte stream.
type patternReader struct{ x uint32 }

// Read implements io.Reader.
func (p *patternReader) Read(b []byte) (int, error) {
	if p.x == 0 {
		p.x = 1
	}
	for i := range b {
		p.x ^= p.x << 13
		p.x ^= p.x >> 17
		p.x ^= p.x << 5
		b[i] = byte(p.x)
	}
	return len(b), nil
}

// childEnv carries the child's orders: which store, which keys.
const childEnv = "BLOBTEST_PUT_IF_ABSENT_CHILD"

// childOrder is what a racing child process does.
type childOrder struct {
	Dir     string          `json:"dir,omitempty"`
	S3URL   string          `json:"s3_url,omitempty"`
	S3      *blob.S3Options `json:"s3,omitempty"`
	Prefix  string          `json:"prefix"`
	Keys    int             `json:"keys"`
	Writer  int             `json:"writer"`
	Payload int             `json:"payload"`
}

// orderFor describes s so that a child process can open it again.
func orderFor(s blob.Store) (childOrder, error) {
	switch s := s.(type) {
	case *blob.Dir:
		return childOrder{Dir: s.Root()}, nil
	case *blob.S3:
		o := s.Options()
		return childOrder{S3URL: s.URL(), S3: &o}, nil
	}
	return childOrder{}, fmt.Errorf("blobtest: a %T cannot be reopened in a child process", s)
}

// open opens the store an order names.
func (c childOrder) open(ctx context.Context) (blob.Store, error) {
	if c.Dir != "" {
		return blob.NewDir(c.Dir)
	}
	if c.S3URL != "" && c.S3 != nil {
		return blob.NewS3(ctx, c.S3URL, *c.S3)
	}
	return nil, errors.New("blobtest: child order names no store")
}

// Main runs the tests, or, in a child process the race test started, the
// child's part. Call it from TestMain in every package that uses Run:
//
//	func TestMain(m *testing.M) { blobtest.Main(m) }
func Main(m *testing.M) {
	if order := os.Getenv(childEnv); order != "" {
		if err := runChild(order, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "blobtest child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild opens the store, says "ready", waits for "go" on stdin, then
// races PutIfAbsent over the keys and prints "won KEY" for each it created.
func runChild(order string, in io.Reader, out io.Writer) error {
	var c childOrder
	if err := json.Unmarshal([]byte(order), &c); err != nil {
		return err
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "go" {
		return fmt.Errorf("waiting for go: %q, %v", line, err)
	}
	for k := range c.Keys {
		key := fmt.Sprintf("%s%d", c.Prefix, k)
		data := childPayload(c.Writer, c.Payload)
		created, err := s.PutIfAbsent(ctx, key, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintln(out, "won", key)
		}
	}
	fmt.Fprintln(out, "done")
	return nil
}

// childPayload is writer w's object: large enough that two uploads overlap
// on the wire, and telling which writer it came from.
func childPayload(w, n int) []byte {
	return append([]byte(fmt.Sprintf("writer %d\n", w)), pattern(byte(w), n)...)
}

func testPutIfAbsentProcesses(t *testing.T, s blob.Store) {
	const writers, keys, payload = 3, 8, 256 << 10
	order, err := orderFor(s)
	if err != nil {
		t.Fatal(err)
	}
	order.Prefix, order.Keys, order.Payload = "race/", keys, payload
	type child struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Reader
		lines []string
	}
	children := make([]*child, writers)
	for w := range writers {
		order.Writer = w
		js, err := json.Marshal(order)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(js))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child: %v", err)
		}
		c := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
		children[w] = c
		t.Cleanup(func() {
			_ = in.Close()
			_ = cmd.Wait()
			if t.Failed() && stderr.Len() > 0 {
				t.Logf("child %d stderr: %s", w, stderr.String())
			}
		})
		line, err := c.out.ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			t.Fatalf("child %d said %q, %v instead of ready (does TestMain call blobtest.Main?)", w, line, err)
		}
	}
	for _, c := range children {
		if _, err := io.WriteString(c.in, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	winners := map[string][]int{}
	for w, c := range children {
		for {
			line, err := c.out.ReadString('\n')
			line = strings.TrimSpace(line)
			if line == "done" {
				break
			}
			if err != nil {
				t.Fatalf("child %d: %v after %q", w, err, c.lines)
			}
			key, ok := strings.CutPrefix(line, "won ")
			if !ok {
				t.Fatalf("child %d said %q", w, line)
			}
			winners[key] = append(winners[key], w)
		}
	}
	for k := range keys {
		key := fmt.Sprintf("race/%d", k)
		ws := winners[key]
		if len(ws) != 1 {
			t.Fatalf("%s: processes %v won, want exactly one", key, ws)
		}
		if got := get(t, s, key); !bytes.Equal(got, childPayload(ws[0], payload)) {
			t.Fatalf("%s does not hold the bytes of process %d, which won", key, ws[0])
		}
	}
	t.Logf("%d processes raced on %d keys: one winner each, wins per key %v", writers, keys, winners)
}
