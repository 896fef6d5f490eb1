package teehistorian_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	"github.com/replayarchive/replay/internal/memtest"
)

// liveSim keeps what the archive keeps of a live recording between
// SplitTail calls.
type liveSim struct {
	header []byte
	chunks []formats.Chunk
	bytes  [][]byte
	trail  []byte
	state  []byte
	events []formats.Event
	meta   *formats.Metadata
	end    int64
}

// grow feeds file[:n] to SplitTail the way the archive does.
func (s *liveSim) grow(t *testing.T, c *teehistorian.Codec, file []byte, n int, final bool) (*formats.TailResult, error) {
	t.Helper()
	in := formats.TailInput{Header: s.header, State: s.state, Events: len(s.events), Final: final}
	var tail formats.Chunk
	if len(s.chunks) > 0 {
		tail = s.chunks[len(s.chunks)-1]
		in.Offset, in.Resume, in.StartTick, in.Seen = tail.Offset, tail.Resume, tail.StartTick, tail.Length
	}
	in.R = bytes.NewReader(file[in.Offset:n])
	var w formatstest.EventRecording
	if in.Resume != nil {
		w.Header(nil) // the header is archived already
	}
	res, err := c.SplitTail(context.Background(), in, &w)
	if err != nil {
		return nil, err
	}
	if in.Resume == nil {
		s.header = w.HeaderData
	} else {
		if len(w.ChunkIndex) == 0 || w.ChunkIndex[0].StartTick != tail.StartTick || !bytes.HasPrefix(w.ChunkBytes[0], s.bytes[len(s.bytes)-1]) {
			t.Fatalf("cut at %d: the first chunk does not extend the open tail", n)
		}
		s.chunks, s.bytes = s.chunks[:len(s.chunks)-1], s.bytes[:len(s.bytes)-1]
	}
	off := in.Offset
	if in.Resume == nil {
		off = int64(len(s.header))
	}
	for i, ch := range w.ChunkIndex {
		ch.Offset = off
		off += ch.Length
		s.chunks = append(s.chunks, ch)
		s.bytes = append(s.bytes, w.ChunkBytes[i])
	}
	s.trail = w.TrailerData
	s.state, s.meta, s.end = res.State, res.Meta, res.End
	s.events = append(append(s.events, w.Events...), res.Meta.Events...)
	return res, nil
}

func TestSplitTailMatchesSplit(t *testing.T) {
	buf := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 3 * time.Minute, Players: 12, Seed: 7})
	file := buf
	c := &teehistorian.Codec{ChunkSize: 16 << 10}
	// Split with a Writer that takes events, as the archive's does.
	var want formatstest.EventRecording
	wantMeta, err := c.Split(context.Background(), bytes.NewReader(file), &want)
	if err != nil {
		t.Fatal(err)
	}
	want.Metadata = wantMeta
	wantEvents := append(want.Events, wantMeta.Events...)
	if len(wantEvents) == 0 {
		t.Fatal("generated file has no events")
	}
	for _, killed := range []int{0, 5} { // whole file; a server killed 5 bytes into FINISH's tick
		t.Run(map[int]string{0: "finished", 5: "killed"}[killed], func(t *testing.T) {
			file := file
			if killed > 0 {
				file = file[:len(file)-killed]
			}
			rng := rand.New(rand.NewPCG(1, uint64(killed)))
			var s liveSim
			n := 0
			for n < len(file) {
				n = min(len(file), n+1+rng.IntN(9000))
				_, err := s.grow(t, c, file, n, false)
				if errors.Is(err, formats.ErrNeedMore) {
					continue
				}
				if err != nil {
					t.Fatalf("cut at %d: %v", n, err)
				}
				if s.end > int64(n) {
					t.Fatalf("cut at %d: end %d past the bytes given", n, s.end)
				}
			}
			res, err := s.grow(t, c, file, len(file), true)
			if err != nil {
				t.Fatal(err)
			}
			got := append([]byte(nil), s.header...)
			for _, b := range s.bytes {
				got = append(got, b...)
			}
			got = append(got, s.trail...)
			if !bytes.Equal(got, file) {
				t.Fatalf("pieces are %d bytes, not the file's %d", len(got), len(file))
			}
			if res.End != int64(len(file)) {
				t.Fatalf("end %d, want %d", res.End, len(file))
			}
			if killed > 0 {
				if res.Finished || len(s.trail) == 0 {
					t.Fatalf("killed file: finished %v, trailer %d bytes", res.Finished, len(s.trail))
				}
				return
			}
			if !res.Finished {
				t.Fatal("not finished")
			}
			if len(s.chunks) != len(want.ChunkIndex) {
				t.Fatalf("%d chunks, Split made %d", len(s.chunks), len(want.ChunkIndex))
			}
			for i := range s.chunks {
				a, b := s.chunks[i], want.ChunkIndex[i]
				if a.StartTick != b.StartTick || a.Ticks != b.Ticks || a.Offset != b.Offset || a.Length != b.Length || !bytes.Equal(a.Resume, b.Resume) {
					t.Fatalf("chunk %d: %+v, Split made %+v", i, a, b)
				}
			}
			if !reflect.DeepEqual(s.events, wantEvents) {
				for i := range min(len(s.events), len(wantEvents)) {
					if s.events[i] != wantEvents[i] {
						t.Fatalf("%d events, Split %d; event %d: %+v, Split %+v", len(s.events), len(wantEvents), i, s.events[i], wantEvents[i])
					}
				}
				t.Fatalf("%d events, Split %d", len(s.events), len(wantEvents))
			}
			a, b := *s.meta, *wantMeta
			a.Events, b.Events = nil, nil
			if a.Start.Equal(b.Start) { // the live state is JSON: the location is lost
				a.Start = b.Start
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("metadata differs:\n%#v\nSplit:\n%#v", a, b)
			}
		})
	}
}

// FuzzSplitTail grows a file through SplitTail at cut points taken from
// cuts (two bytes per step) and seals it: nothing may panic or allocate
// without bound, and when Split takes the whole file, the live pieces
// reassemble it exactly and its events and, for a finished file, its
// chunks are Split's.
func FuzzSplitTail(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, []byte{byte(i), 7, 0, 200, 3, 1, 255, 255})
	}
	f.Fuzz(func(t *testing.T, file, cuts []byte) {
		if len(file) > 256<<10 {
			return
		}
		c := &teehistorian.Codec{ChunkSize: 256}
		var want formatstest.EventRecording // events as the archive takes them
		wantMeta, splitErr := c.Split(context.Background(), bytes.NewReader(file), &want)
		want.Metadata = wantMeta
		var s liveSim
		var res *formats.TailResult
		var err error
		grew := memtest.Allocated(func() {
			n := 0
			for i := 0; n < len(file); i += 2 {
				step := 1
				if i+1 < len(cuts) {
					step += int(cuts[i])<<8 | int(cuts[i+1])
				} else {
					step += len(file) / 3
				}
				n = min(len(file), n+step)
				_, err := s.grow(t, c, file, n, false)
				if errors.Is(err, formats.ErrNeedMore) {
					continue
				}
				if err != nil {
					if splitErr == nil {
						t.Fatalf("cut at %d: %v; Split takes the whole file", n, err)
					}
					return // the file fails as Split said: nothing left to compare
				}
				if s.end > int64(n) {
					t.Fatalf("cut at %d: end %d past the bytes given", n, s.end)
				}
			}
			res, err = s.grow(t, c, file, len(file), true)
		})
		if grew > 64<<20+uint64(len(file))*512 {
			t.Fatalf("%d bytes allocated growing a %d-byte file", grew, len(file))
		}
		if splitErr != nil {
			return
		}
		if err != nil {
			t.Fatalf("final grow: %v; Split takes the whole file", err)
		}
		got := append([]byte(nil), s.header...)
		for _, b := range s.bytes {
			got = append(got, b...)
		}
		got = append(got, s.trail...)
		if !bytes.Equal(got, file) {
			t.Fatalf("pieces are %d bytes, not the file's %d", len(got), len(file))
		}
		if res.End != int64(len(file)) {
			t.Fatalf("end %d, want %d", res.End, len(file))
		}
		if res.Finished != (want.Metadata.Attrs["finished"] == "true") {
			t.Fatalf("finished %v, Split's attrs %v", res.Finished, want.Metadata.Attrs)
		}
		if wantEvents := append(want.Events, wantMeta.Events...); !reflect.DeepEqual(s.events, wantEvents) {
			t.Fatalf("%d events, Split %d", len(s.events), len(wantEvents))
		}
		if !res.Finished {
			return
		}
		if len(s.chunks) != len(want.ChunkIndex) {
			t.Fatalf("%d chunks, Split made %d", len(s.chunks), len(want.ChunkIndex))
		}
		for i := range s.chunks {
			a, b := s.chunks[i], want.ChunkIndex[i]
			if a.StartTick != b.StartTick || a.Ticks != b.Ticks || a.Offset != b.Offset || a.Length != b.Length || !bytes.Equal(a.Resume, b.Resume) {
				t.Fatalf("chunk %d: %+v, Split made %+v", i, a, b)
			}
		}
	})
}

// TestUnnamedJoinHoldsEventsBriefly: events queued behind a JOIN whose
// player is not named yet go out once MaxNameWait ticks of game time have
// passed, so a live recording's commands become searchable even when a
// player is never named; a name within the wait names the JOIN, a later one
// does not, live and whole alike.
func TestUnnamedJoinHoldsEventsBriefly(t *testing.T) {
	const w = teehistorian.MaxNameWait
	hj, err := teehistorian.SampleHeader().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec, err := teehistorian.NewRecorder(&buf, hj)
	if err != nil {
		t.Fatal(err)
	}
	rec.BeginTick(1)
	rec.PlayerJoin(0, false) // named too late
	rec.PlayerJoin(2, false) // named in time
	rec.BeginTick(2)
	rec.ConsoleCommand(1, 0, "say", "early")
	rec.BeginTick(2 + w/2)
	rec.PlayerName(2, "quick")
	rec.Flush()
	held := buf.Len()
	rec.BeginTick(2 + w)
	rec.ConsoleCommand(1, 0, "say", "late")
	rec.Flush()
	released := buf.Len()
	rec.BeginTick(2 + 2*w)
	rec.PlayerName(0, "slow")
	if err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	c := &teehistorian.Codec{ChunkSize: 16 << 10}
	texts := func(events []formats.Event) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Kind+" "+e.Player+": "+e.Text)
		}
		return out
	}
	want := []string{
		"join : client 0 joined (0.6)",
		"join quick: client 2 joined (0.6)",
		"command : say early",
		"command : say late",
	}

	var s liveSim
	if _, err := s.grow(t, c, file, held, false); err != nil {
		t.Fatal(err)
	}
	if got := texts(s.events); len(got) != 0 {
		t.Errorf("before the wait ended, sent %q; want nothing (the first JOIN is still waiting)", got)
	}
	if _, err := s.grow(t, c, file, released, false); err != nil {
		t.Fatal(err)
	}
	if got := texts(s.events); !reflect.DeepEqual(got, want) {
		t.Errorf("after the wait, live events\n%q\nwant\n%q", got, want)
	}
	if _, err := s.grow(t, c, file, len(file), true); err != nil {
		t.Fatal(err)
	}
	if got := texts(s.events); !reflect.DeepEqual(got, want) {
		t.Errorf("sealed live events\n%q\nwant\n%q", got, want)
	}
	// Whole, with and without an EventWriter.
	var sink formatstest.EventRecording
	meta, err := c.Split(context.Background(), bytes.NewReader(file), &sink)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(append(sink.Events, meta.Events...)); !reflect.DeepEqual(got, want) {
		t.Errorf("whole split to an EventWriter\n%q\nwant\n%q", got, want)
	}
	if got := texts(formatstest.Split(t, c, file).Metadata.Events); !reflect.DeepEqual(got, want) {
		t.Errorf("whole split in memory\n%q\nwant\n%q", got, want)
	}
}
