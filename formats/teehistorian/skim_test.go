package teehistorian_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/ddnetsim"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// eventRecording is a formats.Recording that takes the events as they
// come, as the archive's Pending does (the split's JOIN-waiting queue is
// used only then).
type eventRecording struct {
	formatstest.Recording
	events []formats.Event
}

func (r *eventRecording) Event(e formats.Event) error {
	r.events = append(r.events, e)
	return nil
}

// TestSkimSplitsAsRecordByRecord splits real, independently simulated and
// generated files with the skim of common records and without it, with
// and without an event sink, at several chunk sizes: the chunks, their
// resume states, the metadata and the events must be the same.
func TestSkimSplitsAsRecordByRecord(t *testing.T) {
	files := map[string][]byte{}
	for name, b := range formatstest.CorpusFiles(t, "teehistorian", "*.teehistorian") {
		files["corpus/"+name] = b
	}
	for _, k := range ddnetsim.Kinds() {
		s := ddnetsim.NewSession(k.Scaled(1/k.Minutes[1]), 11)
		for i := range 2 {
			var b bytes.Buffer
			if _, err := s.Write(&b, s.Next()); err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			files[fmt.Sprintf("ddnetsim/%s-%d", k.Name, i)] = b.Bytes()
		}
	}
	files["teehistoriangen"] = teehistoriangen.Must(t, teehistoriangen.Options{Duration: 3 * time.Minute, Players: 20, Seed: 5, Messages: true})

	ctx := context.Background()
	for name, file := range files {
		for _, size := range []int{512, 4 << 10, teehistorian.DefaultChunkSize} {
			for _, sink := range []bool{false, true} {
				split := func(c *teehistorian.Codec) (*formats.Metadata, *eventRecording, error) {
					rec := &eventRecording{}
					var w formats.Writer = &rec.Recording
					if sink {
						w = rec
					}
					meta, err := c.Split(ctx, bytes.NewReader(file), w)
					return meta, rec, err
				}
				skim := &teehistorian.Codec{ChunkSize: size}
				meta, got, err := split(skim)
				wantMeta, want, wantErr := split(teehistorian.WithoutSkim(skim))
				where := fmt.Sprintf("%s, chunks of %d, sink %v", name, size, sink)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: error %v, record by record %v", where, err, wantErr)
				}
				if err != nil {
					continue
				}
				if len(got.ChunkIndex) != len(want.ChunkIndex) {
					t.Fatalf("%s: %d chunks, record by record %d", where, len(got.ChunkIndex), len(want.ChunkIndex))
				}
				if !reflect.DeepEqual(got.ChunkIndex, want.ChunkIndex) || !reflect.DeepEqual(got.ChunkBytes, want.ChunkBytes) {
					t.Fatalf("%s: chunks or their resume states differ", where)
				}
				if !reflect.DeepEqual(meta, wantMeta) || !reflect.DeepEqual(got.events, want.events) {
					t.Fatalf("%s: metadata or events differ:\n%+v\n%+v", where, meta, wantMeta)
				}
			}
		}
	}
}

// cancelAfter is a Writer that cancels its context once it has taken n
// chunks, and counts the chunks it gets.
type cancelAfter struct {
	formatstest.Discard
	n, got int
	cancel func()
}

func (w *cancelAfter) Chunk(c formats.Chunk, b []byte) error {
	if w.got++; w.got == w.n {
		w.cancel()
	}
	return nil
}

// TestSplitStopsWhenCancelled: a split whose context is cancelled stops
// within a chunk or two, though the skim takes whole runs of records.
func TestSplitStopsWhenCancelled(t *testing.T) {
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Minute, Players: 16, Seed: 8})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelAfter{n: 3, cancel: cancel}
	_, err := teehistorian.New().Split(ctx, bytes.NewReader(file), w)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("split after cancel: %v, want context.Canceled", err)
	}
	if w.got > w.n+2 {
		t.Fatalf("%d chunks written after the cancel at chunk %d", w.got-w.n, w.n)
	}
}
