// Package formatstest holds what every codec's tests need: an in-memory
// formats.Writer and formats.Source, a check that a split covers the native
// file exactly, and the locator for the shared corpus of real files.
package formatstest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/replayarchive/replay/formats"
)

// Recording is a native file split in memory: it is both the formats.Writer
// that Split fills and the formats.Source that Frames and Clip read.
type Recording struct {
	Metadata    *formats.Metadata
	HeaderData  []byte
	ChunkIndex  []formats.Chunk
	ChunkBytes  [][]byte
	TrailerData []byte
	// Reads counts ReadChunk calls, so a test can show a seek read one chunk.
	Reads int

	size      int64
	gotHeader bool
	gotTrail  bool
}

// Header implements formats.Writer.
func (r *Recording) Header(b []byte) error {
	if r.gotHeader || len(r.ChunkIndex) > 0 || r.gotTrail {
		return fmt.Errorf("formatstest: Header called twice or after a chunk")
	}
	r.gotHeader = true
	r.HeaderData = bytes.Clone(b)
	r.size += int64(len(b))
	return nil
}

// Chunk implements formats.Writer.
func (r *Recording) Chunk(c formats.Chunk, b []byte) error {
	if r.gotTrail {
		return fmt.Errorf("formatstest: Chunk after Trailer")
	}
	var prev *formats.Chunk
	if n := len(r.ChunkIndex); n > 0 {
		prev = &r.ChunkIndex[n-1]
	}
	if err := formats.CheckChunk(prev, c, len(b)); err != nil {
		return fmt.Errorf("formatstest: %w", err)
	}
	c.Offset, c.Length = r.size, int64(len(b))
	c.Resume = bytes.Clone(c.Resume)
	r.size += int64(len(b))
	r.ChunkIndex = append(r.ChunkIndex, c)
	r.ChunkBytes = append(r.ChunkBytes, bytes.Clone(b))
	return nil
}

// Trailer implements formats.Writer.
func (r *Recording) Trailer(b []byte) error {
	if r.gotTrail {
		return fmt.Errorf("formatstest: Trailer called twice")
	}
	r.gotTrail = true
	r.TrailerData = bytes.Clone(b)
	r.size += int64(len(b))
	return nil
}

// EventRecording is a Recording whose Writer also takes events
// (formats.EventWriter), as the archive's does: a codec then sends them
// there instead of listing them in Metadata.Events.
type EventRecording struct {
	Recording
	// Events are the events sent, in order.
	Events []formats.Event
}

// Event implements formats.EventWriter.
func (r *EventRecording) Event(e formats.Event) error {
	r.Events = append(r.Events, e)
	return nil
}

// Meta implements formats.Source.
func (r *Recording) Meta() *formats.Metadata { return r.Metadata }

// Chunks implements formats.Source.
func (r *Recording) Chunks() []formats.Chunk { return r.ChunkIndex }

// ReadChunk implements formats.Source.
func (r *Recording) ReadChunk(_ context.Context, i int) ([]byte, []byte, error) {
	if i < 0 || i >= len(r.ChunkBytes) {
		return nil, nil, fmt.Errorf("formatstest: no chunk %d", i)
	}
	r.Reads++
	return r.ChunkBytes[i], r.ChunkIndex[i].Resume, nil
}

// Bytes reassembles the native file from the pieces.
func (r *Recording) Bytes() []byte {
	var b bytes.Buffer
	b.Write(r.HeaderData)
	for _, c := range r.ChunkBytes {
		b.Write(c)
	}
	b.Write(r.TrailerData)
	return b.Bytes()
}

// source adapts a Recording to formats.Source (whose Header/Trailer take no
// argument, clashing with the Writer methods of the same name).
type source struct{ *Recording }

func (s source) Header() []byte  { return s.HeaderData }
func (s source) Trailer() []byte { return s.TrailerData }

// Source returns r as a formats.Source.
func (r *Recording) Source() formats.Source { return source{r} }

// Split runs codec.Split over native and checks the result: the pieces must
// reassemble to native byte for byte and every chunk must pass
// formats.CheckChunk. It fails the test on any error.
func Split(t testing.TB, codec formats.Codec, native []byte) *Recording {
	t.Helper()
	rec, err := TrySplit(codec, native)
	if err != nil {
		t.Fatalf("%s: split: %v", codec.Name(), err)
	}
	return rec
}

// TrySplit is Split without a testing.TB: it returns the error instead, and
// also reports a reassembly mismatch as an error.
func TrySplit(codec formats.Codec, native []byte) (*Recording, error) {
	rec := &Recording{}
	meta, err := codec.Split(context.Background(), bytes.NewReader(native), rec)
	if err != nil {
		return nil, err
	}
	if meta == nil {
		return nil, fmt.Errorf("%s: split returned nil metadata", codec.Name())
	}
	rec.Metadata = meta
	if got := rec.Bytes(); !bytes.Equal(got, native) {
		return nil, fmt.Errorf("%s: pieces reassemble to %d bytes that differ from the %d input bytes (first difference at %d)",
			codec.Name(), len(got), len(native), firstDiff(got, native))
	}
	return rec, nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// CorpusFiles reads the files of CorpusDir(t, sub) whose names match
// pattern (filepath.Match), by base name; finding none fails the test.
func CorpusFiles(t testing.TB, sub, pattern string) map[string][]byte {
	t.Helper()
	dir := CorpusDir(t, sub)
	paths, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no %s files in %s (%v)", pattern, dir, err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// CorpusDir returns ../shared/corpus/<sub> as seen from the module root. When
// it is missing the test is skipped, or failed when the CI environment
// variable is set: CI must never pass by skipping the real files.
func CorpusDir(t testing.TB, sub string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("formatstest: %v", err)
	}
	dir := filepath.Join(root, "..", "shared", "corpus", sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if os.Getenv("CI") != "" {
			t.Fatalf("corpus %s is missing (CI is set, so this fails instead of skipping)", dir)
		}
		t.Skipf("corpus %s not found", dir)
	}
	return dir
}

// ModuleRoot returns the directory holding go.mod, searching upward from the
// working directory (go test runs tests in their package directory).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("formatstest: %v", err)
	}
	return root
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// CheckBadInput runs the bad-input rules over native: every truncation at a
// step of stride bytes and every single-byte flip at a step of stride must
// either split cleanly (reassembling exactly) or return an error, never
// panic. It returns how many variants errored, for the test to report.
func CheckBadInput(t *testing.T, codec formats.Codec, native []byte, stride int) (errs int) {
	t.Helper()
	if stride < 1 {
		stride = 1
	}
	try := func(what string, b []byte) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s: %s: panic: %v", codec.Name(), what, p)
			}
		}()
		if _, err := TrySplit(codec, b); err != nil {
			errs++
		}
	}
	for n := 0; n < len(native); n += stride {
		try(fmt.Sprintf("truncated at %d", n), native[:n])
	}
	flipped := bytes.Clone(native)
	for i := 0; i < len(native); i += stride {
		flipped[i] ^= 0xff
		try(fmt.Sprintf("byte %d flipped", i), flipped)
		flipped[i] = native[i]
	}
	return errs
}

// Discard is a formats.Writer that keeps nothing, for benchmarks of Split.
type Discard struct{}

// Header implements formats.Writer.
func (Discard) Header([]byte) error { return nil }

// Chunk implements formats.Writer.
func (Discard) Chunk(formats.Chunk, []byte) error { return nil }

// Trailer implements formats.Writer.
func (Discard) Trailer([]byte) error { return nil }
