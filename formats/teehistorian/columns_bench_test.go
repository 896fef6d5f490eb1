package teehistorian_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// BenchmarkJoinColumns joins the record columns of a chunk of a generated
// game as the codec cuts it (every field one byte), of the last 64 KiB of
// that game (cut in a record: a field of the first one is not one byte, so
// joinRecords joins it) and of the corpus's largest file (the target
// fields of inputs often two bytes), the transform's share of a chunk
// read.
//
//	go test -run '^$' -bench JoinColumns -cpu 1 ./formats/teehistorian/
func BenchmarkJoinColumns(b *testing.B) {
	var game bytes.Buffer
	if err := teehistoriangen.Generate(&game, teehistoriangen.Options{Duration: time.Minute, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	rec := formatstest.Split(b, teehistorian.New(), game.Bytes())
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
	for _, bc := range []struct {
		name   string
		native []byte
	}{
		{"chunk", chunk},
		{"generated", game.Bytes()[game.Len()-64<<10:]},
		{"corpus", records(b, corpus)},
	} {
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
