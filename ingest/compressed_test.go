package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/memtest"
	"github.com/replayarchive/replay/internal/racedetect"
	"github.com/ulikunitz/xz"
)

// compress returns b in container c.
func compress(t testing.TB, c Compression, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	var w io.WriteCloser
	var err error
	switch c {
	case Gzip:
		w = gzip.NewWriter(&out)
	case XZ:
		w, err = xz.NewWriter(&out)
	case Zstd:
		w, err = zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

var containers = []struct {
	kind Compression
	ext  string
}{{XZ, ".xz"}, {Gzip, ".gz"}, {Zstd, ".zst"}}

// A corpus file compressed three ways ingests to the plain file's
// recording (compressed first, or plain first), and exports the plain
// bytes.
func TestCompressedCorpusSameRecording(t *testing.T) {
	dir := formatstest.CorpusDir(t, "teehistorian")
	plain := filepath.Join(dir, "265107d7-cdcf-4876-bc00-159bca662955.teehistorian")
	native, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for i, c := range containers {
		path := filepath.Join(tmp, filepath.Base(plain)+c.ext)
		if err := os.WriteFile(path, compress(t, c.kind, native), 0o600); err != nil {
			t.Fatal(err)
		}
		a := newArchive(t)
		p := &Pipeline{Archive: a, Codecs: []formats.Codec{teehistorian.New()}}
		order := []string{path, plain}
		if i%2 == 1 {
			order = []string{plain, path}
		}
		first := runAll(t, p, order[0])[filepath.Base(order[0])]
		if first.Outcome != OutcomeIngested || first.Format != teehistorian.Name || first.NativeBytes != int64(len(native)) {
			t.Fatalf("%s: %+v", order[0], first)
		}
		second := runAll(t, p, order[1])[filepath.Base(order[1])]
		if second.Outcome != OutcomeDup || second.ID != first.ID {
			t.Errorf("%s after %s: %s %v, want already archived %v", order[1], order[0], second.Outcome, second.ID, first.ID)
		}
		if first.ID.String() != "265107d7-cdcf-4876-bc00-159bca662955" {
			t.Errorf("%s: id %v, want the game_uuid", path, first.ID)
		}
		rec, err := a.Open(first.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := rec.WriteTo(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), native) {
			t.Errorf("%s: export differs from the plain file", c.ext)
		}
	}
}

// zeroBomb returns n zero bytes (a multiple of 16 MiB) in container c:
// one compressed member of 16 MiB, repeated (every container here reads
// concatenated members as one stream).
func zeroBomb(t testing.TB, c Compression, n int64) []byte {
	t.Helper()
	const member = 16 << 20
	one := compress(t, c, make([]byte, member))
	return bytes.Repeat(one, int(n/member))
}

// A small file expanding to gigabytes fails with ErrExpansion after the
// slack, fast and in bounded memory.
func TestCompressedBombs(t *testing.T) {
	const claimed = 2 << 30
	for _, c := range containers {
		t.Run(string(c.kind), func(t *testing.T) {
			b := zeroBomb(t, c.kind, claimed)
			if len(b) > 16<<20 {
				t.Fatalf("bomb is %d bytes", len(b))
			}
			var n int64
			var err error
			var took time.Duration
			alloc := memtest.Allocated(func() {
				start := time.Now()
				var d io.ReadCloser
				if d, err = Decompress(bytes.NewReader(b), c.kind); err != nil {
					t.Fatal(err)
				}
				n, err = io.Copy(io.Discard, d)
				d.Close()
				took = time.Since(start)
			})
			t.Logf("%s: %d compressed bytes, stopped after %d: %v (%v, %d MiB allocated)", c.kind, len(b), n, err, took, alloc>>20)
			if !errors.Is(err, ErrExpansion) {
				t.Fatalf("err %v, want ErrExpansion", err)
			}
			if n > ExpansionSlack+int64(len(b))*MaxExpansion+1<<20 {
				t.Errorf("read %d bytes before stopping", n)
			}
			if alloc > 128<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			bound := 10 * time.Second
			if racedetect.Enabled {
				bound *= 10 // the xz bomb took 13.7 s under it, 0.4 s without
			}
			if took > bound {
				t.Errorf("took %v", took)
			}
		})
	}
}

// An xz file asking for a 4 GiB dictionary is refused before the decoder
// allocates it.
func TestCompressedXZHugeDictionary(t *testing.T) {
	b := compress(t, XZ, []byte("LINES x\n"))
	// Block header: size byte, flags, filter id 0x21, size 1, dict byte.
	h := b[12 : 12+(int(b[12])+1)*4]
	pos := bytes.Index(h, []byte{0x21, 0x01})
	if pos < 0 {
		t.Fatal("no LZMA2 filter in the block header")
	}
	h[pos+2] = 40
	fixCRC(h)
	if d, err := Decompress(bytes.NewReader(b), XZ); err == nil {
		_, err = io.ReadAll(d)
		if !errors.Is(err, ErrExpansion) {
			t.Fatalf("err %v, want ErrExpansion", err)
		}
	} else if !errors.Is(err, ErrExpansion) {
		t.Fatalf("err %v, want ErrExpansion", err)
	}
	// The same block in a second stream, after a good one: the decoder
	// must not get to allocate it either.
	two := append(compress(t, XZ, []byte("LINES x\n")), b...)
	d, err := Decompress(bytes.NewReader(two), XZ)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out []byte
	alloc := memtest.Allocated(func() { out, err = io.ReadAll(d) })
	if !errors.Is(err, ErrExpansion) || string(out) != "LINES x\n" {
		t.Fatalf("second stream: %q, %v; want the first stream's bytes and ErrExpansion", out, err)
	}
	if alloc > 64<<20 {
		t.Errorf("allocated %d MiB", alloc>>20)
	}
}

// Concatenated streams, stream padding and multiple blocks pass the guard
// whole.
func TestCompressedXZStructure(t *testing.T) {
	var want, file bytes.Buffer
	for i := range 3 {
		part := bytes.Repeat([]byte{byte('a' + i)}, 100000*(i+1))
		want.Write(part)
		var one bytes.Buffer
		cfg := xz.WriterConfig{BlockSize: 50000, CheckSum: []byte{xz.SHA256, xz.CRC32, xz.CRC64}[i]}
		w, err := cfg.NewWriter(&one)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(part)
		w.Close()
		file.Write(one.Bytes())
		file.Write(make([]byte, 4*i)) // stream padding
	}
	d, err := Decompress(bytes.NewReader(file.Bytes()), XZ)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(d)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%d bytes, %v; want %d", len(got), err, want.Len())
	}
}

// The walk sees through compression: a .gz of an unknown format is
// reported as such, naming the container.
func TestCompressedUnknownInside(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "notes.gz")
	os.WriteFile(path, compress(t, Gzip, []byte("hello")), 0o600)
	p := &Pipeline{Archive: newArchive(t), Codecs: []formats.Codec{teehistorian.New()}}
	r := runAll(t, p, path)["notes.gz"]
	if r.Outcome != OutcomeFailed || !bytes.Contains([]byte(r.Err), []byte("inside gzip")) {
		t.Errorf("%+v", r)
	}
}

// fixCRC rewrites an xz block header's CRC32 after an edit.
func fixCRC(h []byte) {
	binary.LittleEndian.PutUint32(h[len(h)-4:], crc32.ChecksumIEEE(h[:len(h)-4]))
}

func FuzzDecompress(f *testing.F) {
	f.Add([]byte("LINES x\n1 a\n"))
	for _, c := range containers {
		f.Add(compress(f, c.kind, []byte("LINES x\n1 a\n")))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := SniffCompression(b)
		if c == NotCompressed {
			return
		}
		d, err := Decompress(bytes.NewReader(b), c)
		if err != nil {
			return
		}
		defer d.Close()
		io.Copy(io.Discard, io.LimitReader(d, ExpansionSlack+1<<20))
	})
}

// Standard input is looked through too: a compressed stream is the
// recording of the native bytes inside.
func TestCompressedStdin(t *testing.T) {
	file := formatstest.LinesFile("stdin-compressed", 40)
	for _, c := range containers {
		a := newArchive(t)
		p := &Pipeline{Archive: a, Codecs: []formats.Codec{formatstest.Lines{}}, Stdin: bytes.NewReader(compress(t, c.kind, file))}
		r := runAll(t, p, "-")["-"]
		if r.Outcome != OutcomeIngested || r.NativeBytes != int64(len(file)) {
			t.Fatalf("%s: %+v", c.kind, r)
		}
		p.Stdin = bytes.NewReader(file)
		if again := runAll(t, p, "-")["-"]; again.Outcome != OutcomeDup || again.ID != r.ID {
			t.Errorf("%s, then plain: %+v", c.kind, again)
		}
		p.Codecs = []formats.Codec{formatstest.Lines{}, sink{}}
		bomb := append(compress(t, c.kind, []byte("SINK")), zeroBomb(t, c.kind, 256<<20)...)
		p.Stdin = bytes.NewReader(bomb)
		if bomb := runAll(t, p, "-")["-"]; bomb.Outcome != OutcomeFailed || !strings.Contains(bomb.Err, "expands to more than") {
			t.Errorf("%s bomb: %+v", c.kind, bomb)
		}
	}
}

// sink is a test codec taking any input that starts with "SINK", a chunk
// per MiB: the codec a bomb's bytes would all be handed to.
type sink struct{ formatstest.Lines }

func (sink) Name() string { return "sink" }

func (sink) Detect(head []byte) bool { return bytes.HasPrefix(head, []byte("SINK")) }

func (sink) Split(ctx context.Context, r io.Reader, w formats.Writer) (*formats.Metadata, error) {
	buf := make([]byte, 1<<20)
	for tick := int64(0); ; tick++ {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if werr := w.Chunk(formats.Chunk{StartTick: tick, Ticks: 1}, buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &formats.Metadata{Attrs: map[string]string{}}, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
