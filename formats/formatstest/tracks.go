package formatstest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/replayarchive/replay/formats"
)

// Tracks runs c's Track over src for r and checks what every
// formats.Tracker must give: points in tick order within r, each with a
// track and a label. It returns the points.
func Tracks(t testing.TB, c formats.Tracker, src formats.Source, r formats.Range) []formats.Point {
	t.Helper()
	var pts []formats.Point
	err := c.Track(context.Background(), src, r, func(p formats.Point) error {
		pts = append(pts, p)
		return nil
	})
	if err != nil {
		t.Fatalf("track %v: %v", r, err)
	}
	for i, p := range pts {
		if !r.Contains(p.Tick) || i > 0 && p.Tick < pts[i-1].Tick {
			t.Fatalf("point %d at tick %d: outside %v or out of order", i, p.Tick, r)
		}
		if p.Track == "" || p.Label == "" {
			t.Fatalf("point %d at tick %d has no track or label: %+v", i, p.Tick, p)
		}
	}
	return pts
}

// Labels returns the labels of pts, each once, in first-seen order.
func Labels(pts []formats.Point) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pts {
		if !seen[p.Label] {
			seen[p.Label] = true
			out = append(out, p.Label)
		}
	}
	return out
}

// CheckTrackBadChunks runs c's Track over rec with each chunk cut short
// and with bytes flipped (every stride-th), and fails the test on a
// panic; errors are what a damaged chunk should give.
func CheckTrackBadChunks(t *testing.T, c formats.Tracker, rec *Recording, stride int) {
	t.Helper()
	if stride < 1 {
		stride = 1
	}
	try := func(what string) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s: panic: %v", what, p)
			}
		}()
		c.Track(context.Background(), rec.Source(), formats.All(), func(formats.Point) error { return nil })
	}
	for i, native := range rec.ChunkBytes {
		for n := 0; n < len(native); n += stride * 16 {
			rec.ChunkBytes[i] = native[:n]
			try(fmt.Sprintf("chunk %d cut at %d", i, n))
		}
		flipped := bytes.Clone(native)
		rec.ChunkBytes[i] = flipped
		for j := 0; j < len(native); j += stride {
			flipped[j] ^= 0xff
			try(fmt.Sprintf("chunk %d byte %d flipped", i, j))
			flipped[j] = native[j]
		}
		rec.ChunkBytes[i] = native
	}
}

// eventSource is a Recording's Source that is also a formats.EventSource
// over its Metadata.Events.
type eventSource struct{ source }

func (s eventSource) EachEvent(fn func(e *formats.Event) error) error {
	for i := range s.Metadata.Events {
		if err := fn(&s.Metadata.Events[i]); err != nil {
			return err
		}
	}
	return nil
}

// EventSource returns r as a formats.Source that is also a
// formats.EventSource over its Metadata.Events, as the archive's
// recordings are.
func (r *Recording) EventSource() formats.Source { return eventSource{source{r}} }
