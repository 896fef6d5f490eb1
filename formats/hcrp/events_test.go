package hcrp_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

// sinkRecording is a formatstest.Recording that takes events as they come,
// as the archive's Writer does.
type sinkRecording struct {
	*formatstest.Recording
	events []formats.Event
}

// Event implements formats.EventWriter.
func (s *sinkRecording) Event(e formats.Event) error {
	s.events = append(s.events, e)
	return nil
}

func splitToSink(t *testing.T, file []byte) *sinkRecording {
	t.Helper()
	s := &sinkRecording{Recording: new(formatstest.Recording)}
	md, err := hcrp.Codec{}.Split(ctx, bytes.NewReader(file), s)
	if err != nil {
		t.Fatal(err)
	}
	s.Metadata = md
	if !bytes.Equal(s.Bytes(), file) {
		t.Fatal("the pieces do not reassemble to the file")
	}
	return s
}

// manyEventsFile is a compacted file of 7 ticks of 30000 run_start events
// each: more than maxIndexedEvents.
func manyEventsFile(t *testing.T) []byte {
	t.Helper()
	var raw []byte
	for tick := range 7 {
		raw = hcrp.AppendVarInt(raw, int32(tick))
		raw = append(raw, 30000>>8, 30000&0xff)
		raw = append(raw, bytes.Repeat([]byte{byte(hcrp.RunStart)}, 30000)...)
	}
	enc, _ := hcrp.NewEncoder(3)
	comp := enc.EncodeAll(raw, nil)
	var buf bytes.Buffer
	err := hcrp.WriteCompacted(&buf, hcrp.Header{}, []byte{0x0a, 0}, []hcrp.IndexEntry{{Ticks: 7, Flags: hcrp.FlagSnapshot,
		CompressedLen: int32(len(comp)), UncompressedLen: int32(len(raw))}}, func(int) ([]byte, error) { return comp, nil })
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEveryEventToSink checks that every event is searchable: with
// a Writer that takes events as they come (the archive's), every run
// event of a file reaches it, far past maxIndexedEvents, with no warning
// and none held in Metadata.Events.
func TestEveryEventToSink(t *testing.T) {
	b := manyEventsFile(t)
	s := splitToSink(t, b)
	if len(s.events) != 7*30000 || len(s.Metadata.Events) != 0 || len(s.Metadata.Warnings) != 0 {
		t.Fatalf("%d events to the sink (want %d), %d in the metadata, warnings %v", len(s.events), 7*30000,
			len(s.Metadata.Events), s.Metadata.Warnings)
	}
	if last := s.events[len(s.events)-1]; last.Tick != 6 || last.Kind != "run_start" {
		t.Fatalf("last event %+v", last)
	}
}

// TestSinkEventsAsCollected checks that the events a sink gets are those
// Split lists without one, in the same order: the preamble's anticheat
// flags and chat merged in tick order among the chunks' events.
func TestSinkEventsAsCollected(t *testing.T) {
	file, err := hcrpgen.Generate(hcrpgen.Config{Seed: 7, Ticks: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := formatstest.Split(t, hcrp.Codec{}, file).Metadata.Events
	kinds := map[string]int{}
	for _, e := range want {
		kinds[e.Kind]++
	}
	if kinds[formats.EventFlag] == 0 || kinds[formats.EventChat] == 0 || kinds[formats.EventJoin] == 0 {
		t.Fatalf("the generated file lacks preamble or chunk events: %v", kinds)
	}
	got := splitToSink(t, file).events
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink events differ from the collected ones:\n got %v\nwant %v", got, want)
	}
}

// TestLiveDirKeepsEveryEvent checks that a live segment set's grow sends
// every event past maxIndexedEvents: a grow after 100,000 archived events
// (the old cap) hands the writer every event of the new chunks, with no
// "not indexed" warning and none in the metadata.
func TestLiveDirKeepsEveryEvent(t *testing.T) {
	dir, _ := recordDir(t, t.TempDir(), hcrpgen.Config{Seed: 3, Ticks: 400}, false)
	fresh := new(formatstest.EventRecording)
	_, err := hcrp.Codec{}.SplitDirTail(ctx, dir, formats.TailInput{}, fresh)
	if err != nil {
		t.Fatal(err)
	}
	var chunkEvents int
	for _, e := range fresh.Events {
		if e.Kind != formats.EventFlag && e.Kind != formats.EventChat {
			chunkEvents++
		}
	}
	if chunkEvents == 0 {
		t.Fatal("the recorded set has no chunk events")
	}
	got := new(formatstest.EventRecording)
	res, err := hcrp.Codec{}.SplitDirTail(ctx, dir, formats.TailInput{Events: hcrp.MaxIndexedEvents}, got)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(fresh.Events) || len(res.Meta.Events) != 0 {
		t.Errorf("%d events sent after %d archived ones (%d in the metadata), want %d", len(got.Events), hcrp.MaxIndexedEvents, len(res.Meta.Events), len(fresh.Events))
	}
	for _, w := range res.Meta.Warnings {
		if strings.Contains(w, "not indexed") {
			t.Errorf("warning %q", w)
		}
	}
}
