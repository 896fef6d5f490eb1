package teehistorian

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// FuzzSplitTail feeds a file to SplitTail over a growing prefix cut at
// random points, the way the archive follows a server's file: it must
// never panic, never claim an end past the bytes it was given, and a file
// that Split accepts must give the same bytes and events live.
func FuzzSplitTail(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, uint64(i))
	}
	f.Fuzz(func(t *testing.T, file []byte, seed uint64) {
		if len(file) > 64<<10 {
			return
		}
		c := &Codec{ChunkSize: 256}
		rng := rand.New(rand.NewPCG(seed, uint64(len(file))))
		var s liveSim
		n := 0
		for n < len(file) {
			n = min(len(file), n+1+rng.IntN(300))
			_, err := s.grow(t, c, file, n, false)
			if errors.Is(err, formats.ErrNeedMore) {
				continue
			}
			if err != nil {
				return // bad input: an error, not a panic
			}
			if s.end > int64(n) {
				t.Fatalf("cut at %d: end %d past the bytes given", n, s.end)
			}
		}
		res, err := s.grow(t, c, file, len(file), true)
		if err != nil {
			return
		}
		if res.End > int64(len(file)) {
			t.Fatalf("final end %d past the file's %d bytes", res.End, len(file))
		}
		var want formatstest.Recording
		wantMeta, err := c.Split(context.Background(), bytes.NewReader(file), &want)
		if err != nil {
			return
		}
		got := append([]byte(nil), s.header...)
		for _, b := range s.bytes {
			got = append(got, b...)
		}
		got = append(got, s.trail...)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("live pieces are %d bytes, Split's %d", len(got), len(want.Bytes()))
		}
		if len(s.meta.Events) != len(wantMeta.Events) || (len(wantMeta.Events) > 0 && !reflect.DeepEqual(s.meta.Events, wantMeta.Events)) {
			t.Fatalf("live found %d events, Split %d", len(s.meta.Events), len(wantMeta.Events))
		}
	})
}
