// End-to-end tests: a generated session recorded in segments, read live,
// compacted, split, seeked, framed, clipped and ghost-raced; ring
// recording; and the bad-input cases (corrupted index, truncated segment,
// wrong magic, truncations and byte flips).

package hcrp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
)

var ctx = context.Background()

// recordDir records a generated session into a new directory under root,
// with 2-chunk segments and one on-demand flush, and returns the directory
// and the session (for its final positions).
func recordDir(t testing.TB, root string, cfg hcrpgen.Config, finish bool) (string, *hcrpgen.Session) {
	t.Helper()
	s := hcrpgen.NewSession(cfg)
	o := s.Options()
	o.SegmentChunks = 2
	id := uuid.NewSHA1(uuid.Nil, []byte(t.Name()))
	r, err := hcrp.Create(root, id, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		ok, err := s.Step(r)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if i == 199 { // a player leaves: the host flushes on demand
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if finish {
		err = r.Close()
	} else {
		err = r.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, id.String()), s
}

func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allEvents decodes every event of a reader as (tick, encoded event).
func allEvents(t testing.TB, rd *hcrp.Reader, from, to int64) []string {
	t.Helper()
	var out []string
	err := rd.Events(ctx, formats.Ticks(from, to), func(tick int64, e *hcrp.Event) error {
		b, err := hcrp.AppendEvent(nil, e)
		out = append(out, string(hcrp.AppendVarLong(nil, tick))+string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSessionRoundTrip(t *testing.T) {
	dir, sess := recordDir(t, t.TempDir(), hcrpgen.Config{Seed: 7, Ticks: 1000}, false)
	if !hcrp.IsSegmentSet(dir) || hcrp.IsSegmentSet(t.TempDir()) {
		t.Fatal("IsSegmentSet")
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "segment-*.dat"))
	if len(segs) < 5 {
		t.Fatalf("%d segments written, want at least 5", len(segs))
	}

	// Live directory: the rebuilt state at the end is where the generator
	// left its players, exactly.
	live, err := hcrp.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if live.Ticks() != 1000 || len(live.Index) != 10 {
		t.Fatalf("live: %d ticks, %d chunks", live.Ticks(), len(live.Index))
	}
	st, err := live.Seek(ctx, 999)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range sess.Positions() {
		if got := st.Entities[int32(i)].Pos; got != p {
			t.Errorf("player %d at %+v, generator at %+v", i, got, p)
		}
	}

	// Decoded events re-encode to the decompressed chunks byte for byte.
	for i := range live.Index {
		raw, err := live.Chunk(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.Clone(raw)
		var re []byte
		var evs []hcrp.Event
		tick := int64(-1)
		flushTick := func() {
			re = hcrp.AppendVarInt(re, int32(tick))
			re = append(re, byte(len(evs)>>8), byte(len(evs)))
			for j := range evs {
				re, _ = hcrp.AppendEvent(re, &evs[j])
			}
			evs = evs[:0]
		}
		err = hcrp.ScanChunk(raw, &live.Index[i], func(at int64, e hcrp.Event) {
			for tick < at {
				if tick >= int64(live.Index[i].StartTick) {
					flushTick()
				}
				tick++
			}
			e.Items = append([]hcrp.ItemSlot(nil), e.Items...)
			evs = append(evs, e)
		})
		if err != nil {
			t.Fatal(err)
		}
		for ; tick < live.Index[i].EndTick(); tick++ {
			flushTick()
		}
		if !bytes.Equal(re, raw) {
			t.Fatalf("chunk %d: re-encoded events differ from the chunk", i)
		}
	}

	// The segment set as a compacted stream splits, and is stable.
	set, err := hcrp.OpenSegmentSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	setBytes := readAll(t, set)
	if int64(len(setBytes)) != set.Size() || set.Finished() || set.ID().String() != filepath.Base(dir) {
		t.Fatalf("segment set: %d bytes (size %d), finished %v, id %s", len(setBytes), set.Size(), set.Finished(), set.ID())
	}
	set.Close()
	var rec formatstest.Recording
	md, err := hcrp.Codec{}.SplitSegmentSet(ctx, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if !md.Growing || md.ID.String() != filepath.Base(dir) || !bytes.Equal(rec.Bytes(), setBytes) {
		t.Fatalf("SplitSegmentSet: growing %v, id %s, same bytes %v", md.Growing, md.ID, bytes.Equal(rec.Bytes(), setBytes))
	}
	formatstest.Split(t, hcrp.Codec{}, setBytes)

	// Compaction recompresses; the events stay the same.
	var comp bytes.Buffer
	if err := hcrp.Compact(ctx, live, &comp, hcrp.CompactOptions{Extra: &hcrp.Meta{Server: "compacted"}}); err != nil {
		t.Fatal(err)
	}
	if comp.Len() >= len(setBytes) {
		t.Errorf("compacted file is %d bytes, the level-3 stream %d", comp.Len(), len(setBytes))
	}
	rd, err := hcrp.NewReader(bytes.NewReader(comp.Bytes()), int64(comp.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := allEvents(t, live, 0, -1), allEvents(t, rd, 0, -1); strings.Join(a, "|") != strings.Join(b, "|") {
		t.Fatalf("compacted events differ (%d vs %d)", len(a), len(b))
	}

	// Split of the compacted file: pieces, resume state and metadata.
	r := formatstest.Split(t, hcrp.Codec{}, comp.Bytes())
	m := r.Metadata
	if m.ID != uuid.Nil || m.Growing || m.Ticks != 1000 || m.Duration.Seconds() != 50 || m.TickRate != 20 ||
		m.Session != hcrpgen.World.String() || m.Map != "parkour-spire" || m.Server != "compacted" || len(m.Players) != 3 ||
		!m.Start.Equal(sess.Options().Start) || m.Attrs["data_version"] != "4671" {
		t.Fatalf("metadata: %+v", m)
	}
	if len(r.ChunkIndex) != 10 || !r.ChunkIndex[3].Precompressed || r.ChunkIndex[3].StartTick != 300 || r.ChunkIndex[3].Ticks != 100 {
		t.Fatalf("chunks: %+v", r.ChunkIndex[3])
	}
	if fl, snap, err := hcrp.Resume(r.ChunkIndex[3].Resume); err != nil || fl != hcrp.FlagSnapshot || snap != 3 {
		t.Fatalf("resume of chunk 3: %d %d %v", fl, snap, err)
	}
	kinds := map[string]int{}
	for _, e := range m.Events {
		kinds[e.Kind]++
	}
	if kinds[formats.EventFlag] != len(sess.Options().Meta.Anticheat) || kinds[formats.EventChat] != len(sess.Options().Meta.Chat) ||
		kinds[formats.EventFinish] != 1 || kinds["checkpoint"] == 0 || kinds[formats.EventJoin] != 3 || kinds["run_start"] != 1 {
		t.Fatalf("event kinds: %v", kinds)
	}
	if len(m.Flags) == 0 || len(m.Warnings) != 0 {
		t.Fatalf("flags %v, warnings %v", m.Flags, m.Warnings)
	}

	// Frames of a range inside one chunk read exactly that chunk.
	src := r.Source()
	r.Reads = 0
	var frames []formats.Frame
	err = hcrp.Codec{}.Frames(ctx, src, formats.Ticks(420, 460), func(f formats.Frame) error { frames = append(frames, f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if r.Reads != 1 {
		t.Fatalf("frames [420, 460] read %d chunks, want 1", r.Reads)
	}
	for _, f := range frames {
		if _, err := json.Marshal(f); err != nil {
			t.Fatalf("frame %+v does not marshal: %v", f, err)
		}
	}
	if frames[0].Type != "state" || frames[0].Tick != 420 {
		t.Fatalf("first frame %+v, want the state at 420", frames[0])
	}
	moves := 0
	for _, f := range frames[1:] {
		if f.Tick < 420 || f.Tick > 460 {
			t.Fatalf("frame outside the range: %+v", f)
		}
		if f.Type == "delta_move" {
			moves++
		}
	}
	if moves != 41*3 {
		t.Fatalf("%d delta moves in 41 ticks of 3 players", moves)
	}

	// Clip: a valid file from the snapshot chunk at or before 250 to the
	// chunk holding 420, renumbered from 0, with the same events.
	var clip bytes.Buffer
	if err := (hcrp.Codec{}).Clip(ctx, src, formats.Ticks(250, 420), &clip); err != nil {
		t.Fatal(err)
	}
	cr := formatstest.Split(t, hcrp.Codec{}, clip.Bytes())
	if cr.Metadata.Ticks != 300 || cr.Metadata.Attrs["meta.source_start_tick"] != "200" ||
		!cr.Metadata.Start.Equal(sess.Options().Start.Add(10e9)) {
		t.Fatalf("clip metadata: %+v", cr.Metadata)
	}
	crd, _ := hcrp.NewReader(bytes.NewReader(clip.Bytes()), int64(clip.Len()))
	want := allEvents(t, rd, 200, 499)
	got := allEvents(t, crd, 0, -1)
	if len(got) != len(want) {
		t.Fatalf("clip has %d events, original range %d", len(got), len(want))
	}
	for i := range got {
		// Same event bytes; ticks shifted by 200.
		var tg, tw int64
		tg, n, _ := hcrp.ReadVarLong([]byte(got[i]), 0)
		tw, m2, _ := hcrp.ReadVarLong([]byte(want[i]), 0)
		if tg+200 != tw || got[i][n:] != want[i][m2:] {
			t.Fatalf("clip event %d differs", i)
		}
	}
	for _, f := range cr.Metadata.Events {
		if f.Kind == formats.EventFlag && (f.Tick < 0 || f.Tick >= 300) {
			t.Fatalf("clip flag outside the clip: %+v", f)
		}
	}
}

func TestSeekMatchesFullReplay(t *testing.T) {
	// Snapshots every third chunk: seeks walk back to them.
	b, err := hcrpgen.Generate(hcrpgen.Config{Seed: 3, Ticks: 800, Players: 4}, func(o *hcrp.Options) { o.SnapshotEvery = 3 })
	if err != nil {
		t.Fatal(err)
	}
	rd, err := hcrp.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Positions after every tick, from one pass from the start.
	full := hcrp.NewState()
	var at []map[int32]hcrp.Pos
	last := int64(-1)
	snap := func(upto int64) {
		for ; last < upto; last++ {
			m := map[int32]hcrp.Pos{}
			for id, e := range full.Entities {
				m[id] = e.Pos
			}
			at = append(at, m)
		}
	}
	rd.Events(ctx, formats.All(), func(tick int64, e *hcrp.Event) error {
		snap(tick - 1)
		full.Apply(e)
		return nil
	})
	snap(799)
	for i, e := range rd.Index {
		if e.Snapshot() != (i%3 == 0) {
			t.Fatalf("chunk %d: snapshot %v", i, e.Snapshot())
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		tick := rng.Int64N(800)
		st, err := rd.Seek(ctx, tick)
		if err != nil {
			t.Fatal(err)
		}
		for id, p := range at[tick] {
			if st.Entities[id] == nil || st.Entities[id].Pos != p {
				t.Fatalf("seek %d: entity %d at %+v, full replay %+v", tick, id, st.Entities[id], p)
			}
		}
	}

	// Frames and Clip walk back to the snapshot too, and read no more.
	r := formatstest.Split(t, hcrp.Codec{}, b)
	var state formats.Frame
	err = hcrp.Codec{}.Frames(ctx, r.Source(), formats.Ticks(550, 560), func(f formats.Frame) error {
		if f.Type == "state" {
			state = f
		}
		return nil
	})
	if err != nil || r.Reads != 3 || state.Tick != 550 {
		t.Fatalf("frames [550, 560]: %d chunk reads (want 3: chunks 3 to 5), state %+v, %v", r.Reads, state, err)
	}
	ents := state.Data.(map[string]any)["entities"].([]map[string]any)
	if len(ents) != 4 || ents[2]["x"] != at[549][2].X {
		t.Fatalf("state at 550: %v, full replay %+v", ents, at[549][2])
	}
	var clip bytes.Buffer
	if err := (hcrp.Codec{}).Clip(ctx, r.Source(), formats.Ticks(550, 560), &clip); err != nil {
		t.Fatal(err)
	}
	cr := formatstest.Split(t, hcrp.Codec{}, clip.Bytes())
	if cr.Metadata.Ticks != 300 || cr.Metadata.Attrs["meta.source_start_tick"] != "300" {
		t.Fatalf("clip of [550, 560]: %d ticks from %s", cr.Metadata.Ticks, cr.Metadata.Attrs["meta.source_start_tick"])
	}
}

func TestRing(t *testing.T) {
	s := hcrpgen.NewSession(hcrpgen.Config{Seed: 5, Ticks: 1000})
	o := s.Options()
	ring, err := hcrp.NewRing(o, 10e9) // ten seconds = 200 ticks
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ring.Recorder); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ring.Save(&out, &hcrp.Meta{Server: "report #12"}); err != nil {
		t.Fatal(err)
	}
	r := formatstest.Split(t, hcrp.Codec{}, out.Bytes())
	if r.Metadata.Ticks < 200 || r.Metadata.Ticks > 300 || r.Metadata.Server != "report #12" ||
		r.Metadata.Attrs["meta.source_start_tick"] != "800" {
		t.Fatalf("ring save: %d ticks, %+v", r.Metadata.Ticks, r.Metadata.Attrs)
	}
	whole, err := hcrpgen.Generate(hcrpgen.Config{Seed: 5, Ticks: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wr, _ := hcrp.NewReader(bytes.NewReader(whole), int64(len(whole)))
	rr, _ := hcrp.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	a, b := allEvents(t, wr, 800, -1), allEvents(t, rr, 0, -1)
	if len(a) != len(b) {
		t.Fatalf("ring kept %d events, the whole recording has %d after tick 800", len(b), len(a))
	}
	// Recording goes on after a save.
	if err := ring.StartTick(); err != nil {
		t.Fatal(err)
	}
}

func TestGhost(t *testing.T) {
	fast, err := hcrpgen.Generate(hcrpgen.Config{Seed: 1, Ticks: 600, Pace: 1.2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := hcrpgen.Generate(hcrpgen.Config{Seed: 2, Ticks: 700}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := formatstest.Split(t, hcrp.Codec{}, fast)
	b := formatstest.Split(t, hcrp.Codec{}, slow)
	g, err := hcrp.NewGhost(ctx, a.Source(), b.Source())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	n := 0
	for g.Next() {
		if g.Tick() != int64(n) {
			t.Fatalf("step %d reports tick %d", n, g.Tick())
		}
		if n == 300 && len(g.Positions()) != 3 {
			t.Fatalf("ghost has %d entities", len(g.Positions()))
		}
		n++
	}
	sum := g.Summary()
	if g.Err() != nil || n != 700 || sum.Both != 600 || sum.MaxGap <= 0 || sum.MeanGap <= 0 || len(sum.Splits) == 0 {
		t.Fatalf("ghost: %d ticks, %v, %+v", n, g.Err(), sum)
	}
	for _, s := range sum.Splits {
		if s.Delta >= 0 {
			t.Errorf("faster run behind at %s: %+v", s.Checkpoint, s)
		}
	}
	if out := sum.String(); !strings.Contains(out, "split cp-1") || !strings.Contains(out, "gap: mean") {
		t.Fatalf("summary text:\n%s", out)
	}
	t.Logf("\n%s", sum)
	other, _ := hcrpgen.Generate(hcrpgen.Config{Seed: 2, Ticks: 100, WorldID: uuid.New()}, nil)
	if _, err := hcrp.NewGhost(ctx, a.Source(), formatstest.Split(t, hcrp.Codec{}, other).Source()); err == nil {
		t.Fatal("ghost across worlds accepted")
	}
}

func wantFormatError(t *testing.T, err error, what string) *formats.Error {
	t.Helper()
	var fe *formats.Error
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *formats.Error about %s", err, what)
	}
	if !strings.Contains(fe.Error(), what) {
		t.Fatalf("error %q does not mention %q", fe.Error(), what)
	}
	return fe
}

func TestBadInput(t *testing.T) {
	b, err := hcrpgen.Generate(hcrpgen.Config{Seed: 9, Ticks: 250, Players: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := hcrp.ParseHeader(b)
	split := func(b []byte) error {
		_, err := formatstest.TrySplit(hcrp.Codec{}, b)
		return err
	}

	bad := bytes.Clone(b)
	copy(bad, "HCRQ")
	fe := wantFormatError(t, split(bad), "magic")
	if fe.Offset != 0 || (hcrp.Codec{}).Detect(bad) {
		t.Fatalf("wrong magic: %v", fe)
	}

	// Corrupted index: the second entry's start tick.
	bad = bytes.Clone(b)
	ibase := hcrp.HeaderSize + int(h.MetadataLen)
	_, p, _ := hcrp.ReadVarInt(b, ibase)
	_, p, _ = hcrp.ReadVarInt(b, p)
	bad[p+1] ^= 0x40 // inside entry 0's offset
	fe = wantFormatError(t, split(bad), "index entry 0: expected chunk offset")
	if fe.Offset < int64(ibase) || fe.Offset > int64(ibase)+int64(h.IndexLen) {
		t.Fatalf("index error at %d, index spans [%d, %d)", fe.Offset, ibase, ibase+int(h.IndexLen))
	}

	// Truncated file: the error names the chunk and where the bytes ran out.
	fe = wantFormatError(t, split(b[:len(b)-10]), "chunk 2")
	if fe.Offset != int64(len(b)-10) {
		t.Fatalf("truncation reported at %d, want %d", fe.Offset, len(b)-10)
	}
	wantFormatError(t, split(append(bytes.Clone(b), 0)), "end of file")
	wantFormatError(t, split(b[:100]), "header")

	// Truncated segment of a live recording.
	dir, _ := recordDir(t, t.TempDir(), hcrpgen.Config{Seed: 4, Ticks: 500}, true)
	seg := filepath.Join(dir, hcrp.SegmentName(1))
	st, _ := os.Stat(seg)
	os.Truncate(seg, st.Size()-7)
	_, err = hcrp.OpenSegmentSet(dir)
	fe = wantFormatError(t, err, "segment-001.dat")
	if fe.Offset != st.Size()-7 {
		t.Fatalf("truncated segment reported at %d, want %d", fe.Offset, st.Size()-7)
	}
	_, err = hcrp.OpenDir(dir)
	wantFormatError(t, err, "truncated")
	pre, _ := os.ReadFile(filepath.Join(dir, hcrp.PreambleFile))
	wantFormatError(t, split(pre), "ingest the directory")

	// A chunk whose events do not decode still splits (with a warning) and
	// Frames emits a raw frame for the rest of it.
	rawChunk := []byte{0, 0, 1, 0x63} // tick 0, one event of unknown id 99
	var buf bytes.Buffer
	enc, _ := hcrp.NewEncoder(3)
	comp := enc.EncodeAll(rawChunk, nil)
	hdr := hcrp.Header{WorldID: hcrpgen.World}
	if err := hcrp.WriteCompacted(&buf, hdr, []byte{0x0a, 0}, []hcrp.IndexEntry{{Ticks: 1, CompressedLen: int32(len(comp)), UncompressedLen: int32(len(rawChunk))}},
		func(int) ([]byte, error) { return comp, nil }); err != nil {
		t.Fatal(err)
	}
	r := formatstest.Split(t, hcrp.Codec{}, buf.Bytes())
	if len(r.Metadata.Warnings) != 1 || !strings.Contains(r.Metadata.Warnings[0], "unknown event id 99") {
		t.Fatalf("warnings %v", r.Metadata.Warnings)
	}
	var frames []formats.Frame
	hcrp.Codec{}.Frames(ctx, r.Source(), formats.All(), func(f formats.Frame) error { frames = append(frames, f); return nil })
	if len(frames) != 1 || frames[0].Type != "raw" {
		t.Fatalf("frames of an undecodable chunk: %+v", frames)
	}
}

func TestCheckBadInput(t *testing.T) {
	b, err := hcrpgen.Generate(hcrpgen.Config{Seed: 11, Ticks: 220, Players: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := formatstest.CheckBadInput(t, hcrp.Codec{}, b, 7)
	t.Logf("%d bytes, %d bad variants rejected", len(b), errs)
	if errs < len(b)/7 {
		t.Fatalf("only %d of about %d variants were rejected", errs, 2*len(b)/7)
	}
}

func TestDetect(t *testing.T) {
	b, _ := hcrpgen.Generate(hcrpgen.Config{Seed: 1, Ticks: 20}, nil)
	for _, tc := range []struct {
		head []byte
		want bool
	}{
		{b[:min(len(b), formats.DetectSize)], true},
		{b[:6], true},
		{b[:5], false},
		{[]byte("HCRP\x00\x09"), false},
		{[]byte("HCRP\x00\x00"), false},
		{[]byte("HCTR\x00\x02"), false},
		{nil, false},
	} {
		if got := (hcrp.Codec{}).Detect(tc.head); got != tc.want {
			t.Errorf("Detect(% x) = %v", tc.head[:min(len(tc.head), 8)], got)
		}
	}
}

func TestIndexedEventsBounded(t *testing.T) {
	r := formatstest.Split(t, hcrp.Codec{}, manyEventsFile(t))
	if len(r.Metadata.Events) != hcrp.MaxIndexedEvents || len(r.Metadata.Warnings) != 1 {
		t.Fatalf("%d events indexed, warnings %v", len(r.Metadata.Events), r.Metadata.Warnings)
	}
}
