package teehistorian_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// BenchmarkJoinColumns joins the record columns of columnCases, the
// transform's share of a chunk read.
//
//	go test -run '^$' -bench JoinColumns -cpu 1 ./formats/teehistorian/
func BenchmarkJoinColumns(b *testing.B) {
	for _, bc := range columnCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			c := teehistorian.New()
			cols := c.SplitColumns(bc.native, nil)
			dst := make([]byte, 0, len(bc.native)+64)
			b.SetBytes(int64(len(bc.native)))
			for b.Loop() {
				out, err := c.JoinColumns(dst[:0], cols)
				if err != nil || len(out) != len(bc.native) {
					b.Fatalf("%d bytes, %v", len(out), err)
				}
			}
		})
	}
}

// BenchmarkSplitColumns splits the chunks of BenchmarkJoinColumns into
// their columns, the transform's share of an ingest's compressing stage.
//
//	go test -run '^$' -bench SplitColumns -cpu 1 ./formats/teehistorian/
func BenchmarkSplitColumns(b *testing.B) {
	for _, bc := range columnCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			c := teehistorian.New()
			cols := c.SplitColumns(bc.native, nil)
			b.SetBytes(int64(len(bc.native)))
			for b.Loop() {
				cols = c.SplitColumns(bc.native, cols)
			}
			if n := len(cols[len(cols)-2]); bc.name == "chunk" && n != 0 { // the tail, before the layout stream
				b.Fatalf("%d bytes in the tail stream of a whole chunk", n)
			}
		})
	}
}

// columnCase is one chunk the column benchmarks split and join.
type columnCase struct {
	name   string
	native []byte
}

// columnCases are a chunk of a generated game as the codec cuts it
// (every field one byte), the last 64 KiB of that game (cut in a record:
// a field of the first one is not one byte) and the corpus's largest file
// (the target fields of inputs often two bytes).
func columnCases(b *testing.B) []columnCase {
	game := teehistoriangen.Must(b, teehistoriangen.Options{Duration: time.Minute, Seed: 3})
	rec := formatstest.Split(b, teehistorian.New(), game)
	chunk, _, err := rec.ReadChunk(b.Context(), 1)
	if err != nil {
		b.Fatal(err)
	}
	var corpus []byte
	for _, f := range teehistorian.CorpusFiles(b) {
		if len(f) > len(corpus) {
			corpus = f
		}
	}
	return []columnCase{
		{"chunk", chunk},
		{"generated", game[len(game)-64<<10:]},
		{"corpus", records(b, corpus)},
	}
}

// records returns the records of a teehistorian file: what follows its
// magic and JSON header.
func records(b *testing.B, file []byte) []byte {
	b.Helper()
	i := bytes.IndexByte(file[min(len(file), len(teehistorian.Magic)):], 0)
	if len(file) < len(teehistorian.Magic) || i < 0 {
		b.Fatal("no header in the largest corpus file")
	}
	return file[len(teehistorian.Magic)+i+1:]
}
