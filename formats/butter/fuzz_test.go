// Fuzz targets for the three parsers: .butter, .echoreplay and .milk. They
// are seeded with small generated files and, at run time when the shared
// corpus is present, with the real files.

package butter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// corpusFiles returns up to limit bytes of each corpus file matching glob,
// or nothing when the corpus is absent.
func corpusFiles(glob string, limit int) [][]byte {
	root, err := os.Getwd()
	if err != nil {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(root, "..", "..", "..", "shared", "corpus", "butter", glob))
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil {
			out = append(out, b[:min(len(b), limit)])
		}
	}
	return out
}

// watchdog panics when the returned stop is not called within 10s, so a
// hang shows up as a failure naming the input.
func watchdog(name string, b []byte) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			os.WriteFile(filepath.Join(os.TempDir(), "butter-hang-"+name+".bin"), b, 0o644)
			panic(fmt.Sprintf("%s: input of %d bytes takes over 10s: %x", name, len(b), b))
		}
	}()
	return func() { close(done) }
}

// exercise runs every codec entry point over b; none may panic.
func exercise(t *testing.T, c formats.Codec, b []byte) {
	c.Detect(b[:min(len(b), formats.DetectSize)])
	rec, err := formatstest.TrySplit(c, b)
	if err != nil {
		return
	}
	ctx := context.Background()
	src := rec.Source()
	_ = c.Frames(ctx, src, formats.All(), func(formats.Frame) error { return nil })
	_ = c.Frames(ctx, src, formats.Ticks(3, 5), func(formats.Frame) error { return nil })
	_ = c.Clip(ctx, src, formats.Ticks(1, 4), io.Discard)
	if e, ok := c.(formats.Exporter); ok {
		for _, format := range e.ExportFormats() {
			_ = e.Export(ctx, src, format, formats.Ticks(0, 3), nil, io.Discard)
		}
	}
}

func FuzzButter(f *testing.F) {
	frames := exampleFrames(f, 4)
	for _, c := range []Compression{CompressNone, CompressGzip, CompressZstd3} {
		f.Add(writeFrames(f, frames, WriterOptions{KeyframeInterval: 2, Compression: c}))
	}
	for _, b := range corpusFiles("reference/butter/*.butter", 8<<10) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		defer watchdog("butter", b)()
		_, _ = Decode(context.Background(), b, DecodeOptions{MaxChunkPayload: 1 << 20})
		_, _ = Decode(context.Background(), b, DecodeOptions{Reference: true, MaxChunkPayload: 1 << 20})
		exercise(t, &Codec{Options: DecodeOptions{MaxChunkPayload: 1 << 20}}, b)
	})
}

func FuzzEchoReplay(f *testing.F) {
	var text []byte
	for _, fr := range exampleFrames(f, 3) {
		text, _ = AppendLine(text, fr)
	}
	f.Add(text)
	f.Add(zipped(f, text))
	f.Add([]byte("2021/11/20 04:20:00.000\t{}\n\n2021/11/20 04:20:00.033\t{\"teams\":[]}\t{\"user_bones\":[]}\n"))
	// the 2018 API shape, plain and zipped
	_, old := echoReplay2018(f, 2)
	f.Add(old)
	f.Add(zipped(f, old))
	f.Add([]byte("2018/11/20 04:20:00.000\t{\"disc\":{\"position\":[0,0,0]},\"teams\":[{\"players\":[{\"name\":\"a\",\"position\":[1,2,3],\"lhand\":[1,2,3],\"rhand\":[1,2,3]}]}]}\n"))
	// zip members whose declared size is too large, or lies
	f.Add(rawZip(f, "a.echoreplay", deflateNewlines(f, 1<<20), 1<<40))
	f.Add(rawZip(f, "b.echoreplay", deflateNewlines(f, 1<<20), 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		defer watchdog("echoreplay", b)()
		exercise(t, NewEchoReplay(), b)
	})
}

// tinyMilk is a .milk file with one player per team, one group and two
// samples.
func tinyMilk() []byte {
	h := &MilkHeader{Players: [][]string{{"a"}, {"b"}}, Numbers: [][]int{{1}, {2}}}
	b := []byte(`{"author":"x","players":[["a"],["b"]],"numbers":[[1],[2]]}` + "\x00")
	g := make([]byte, h.groupSize())
	g[0], g[1], g[2] = 0xFE, 0xFD, 3
	b = append(b, g...)
	for i := 0; i < 2; i++ {
		s := make([]byte, h.sampleSize())
		s[0], s[1], s[8] = 0xFD, 0xFE, byte(i)
		s[len(s)-3] = 0x80
		b = append(b, s...)
	}
	return b
}

func FuzzMilk(f *testing.F) {
	f.Add(tinyMilk())
	for _, b := range corpusFiles("*.milk", 4<<10) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		defer watchdog("milk", b)()
		exercise(t, NewMilk(), b)
	})
}

func TestTinyMilk(t *testing.T) {
	rec := formatstest.Split(t, NewMilk(), tinyMilk())
	got := framesOf(t, NewMilk(), rec.Source(), 0, -1)
	if len(got) != 2 || !bool(got[0].Data.(*Frame).Teams[0].Players[0].Possession) {
		t.Fatalf("%d frames", len(got))
	}
	var buf bytes.Buffer
	if err := NewMilk().Export(context.Background(), rec.Source(), "echoreplay", formats.All(), map[string]string{"rate": "30"}, &buf); err != nil {
		t.Fatal(err)
	}
	fs, err := ReadEchoReplay(buf.Bytes())
	if err != nil || len(fs) != 2 || fs[1].RecordedTime.Sub(fs[0].RecordedTime).Milliseconds() != 33 {
		t.Fatalf("export: %v %d", err, len(fs))
	}
}
