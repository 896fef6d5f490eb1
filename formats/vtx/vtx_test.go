// Tests of the VTX codec: the real corpus files split, reassemble, read,
// decode to named frames and clip; generated files of both backends round
// trip through the writer and reader; a missing footer is recovered; bad
// input errors with offsets instead of panicking; zstd bombs are refused.

package vtx

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// corpusFile describes one file of shared/corpus/vtx (SOURCES.md, spec A.4).
type corpusFile struct {
	name        string
	backend     Backend
	size        int
	frames      int64
	chunkFrames []int64
	uuid        string
	headerRaw   int // decompressed header blob
	footerRaw   int
	players     int // distinct entities: 10 players, a match state, 10 projectiles
}

var corpusFiles = []corpusFile{
	{"arena_from_fbs_ds.vtx", FlatBuffers, 1783336, 3600, []int64{500, 500, 500, 500, 500, 500, 500, 100}, "arena-adv-fbs-0001", 8936, 58032, 21},
	{"arena_from_json_ds.vtx", FlatBuffers, 1783336, 3600, []int64{500, 500, 500, 500, 500, 500, 500, 100}, "", 8936, 58032, 21},
	{"arena_from_proto_ds.vtx", Protobuf, 1887222, 3600, []int64{500, 500, 500, 500, 500, 500, 500, 100}, "arena-adv-proto-0001", 8789, 45331, 21},
	{"post_processed.vtx", FlatBuffers, 3302, 30, []int64{16, 14}, "sample-postproc-0001", 8936, 680, 2},
}

func readCorpus(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(formatstest.CorpusDir(t, "vtx"), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCorpusSplit(t *testing.T) {
	for _, cf := range corpusFiles {
		t.Run(cf.name, func(t *testing.T) {
			data := readCorpus(t, cf.name)
			if len(data) != cf.size {
				t.Fatalf("size %d, want %d", len(data), cf.size)
			}
			if !(Codec{}).Detect(data[:min(len(data), formats.DetectSize)]) {
				t.Fatal("Detect = false")
			}
			rec := formatstest.Split(t, Codec{}, data)
			m := rec.Metadata
			if len(rec.ChunkIndex) != len(cf.chunkFrames) {
				t.Fatalf("%d chunks, want %d", len(rec.ChunkIndex), len(cf.chunkFrames))
			}
			var start int64
			for i, c := range rec.ChunkIndex {
				if c.StartTick != start || c.Ticks != cf.chunkFrames[i] || !c.Precompressed {
					t.Errorf("chunk %d = %+v, want start %d, %d ticks, precompressed", i, c, start, cf.chunkFrames[i])
				}
				if want := time.Duration(start) * time.Second / 60; absDur(c.Time-want) > time.Millisecond {
					t.Errorf("chunk %d time %v, want about %v", i, c.Time, want)
				}
				start += c.Ticks
			}
			if m.Ticks != cf.frames || m.TickRate != 60 {
				t.Errorf("ticks %d rate %v, want %d at 60", m.Ticks, m.TickRate, cf.frames)
			}
			if want := time.Duration(cf.frames-1) * time.Second / 60; absDur(m.Duration-want) > time.Millisecond {
				t.Errorf("duration %v, want %v", m.Duration, want)
			}
			if cf.uuid != "" && m.Session != cf.uuid {
				t.Errorf("session %q, want %q", m.Session, cf.uuid)
			}
			if m.Start.Year() != 2026 {
				t.Errorf("start %v, want a 2026 time", m.Start)
			}
			if m.Attrs["entity_types"] != "Player,Projectile,MatchState" || m.Attrs["schema_identifier"] != "VTX_GameData" ||
				m.Attrs["format_version"] != "1.0" || m.Attrs["fps"] != "60" || m.Attrs["backend"] != cf.backend.String() {
				t.Errorf("attrs %v", m.Attrs)
			}
			if len(m.Warnings) != 0 {
				t.Errorf("warnings %v", m.Warnings)
			}
			if cf.players > 0 {
				if len(m.Players) != cf.players {
					t.Fatalf("players %+v, want %d", m.Players, cf.players)
				}
				p0, p1 := m.Players[0], m.Players[1]
				if p0.ID != "player_0" || p0.Team != "Player" || p0.Name == "" || p1.ID != "player_1" {
					t.Errorf("players %+v", m.Players)
				}
				if cf.players == 21 && (m.Players[10].ID != "match_001" || m.Players[10].Team != "MatchState" ||
					m.Players[0].Name != "Alpha" || m.Players[20].Team != "Projectile") {
					t.Errorf("players %+v", m.Players)
				}
			}
			// Header and trailer pieces hold the blobs the spec lists.
			dec := NewDecoder(0)
			defer dec.Close()
			if raw, _ := dec.Unpack(rec.HeaderData[8:]); len(raw) != cf.headerRaw {
				t.Errorf("header blob decodes to %d bytes, want %d", len(raw), cf.headerRaw)
			}
			tr := rec.TrailerData
			if raw, _ := dec.Unpack(tr[:len(tr)-8]); len(raw) != cf.footerRaw {
				t.Errorf("footer blob decodes to %d bytes, want %d", len(raw), cf.footerRaw)
			}
			// A reader that cannot seek gives the same pieces.
			rec2 := &formatstest.Recording{}
			if _, err := (Codec{}).Split(context.Background(), struct{ io.Reader }{bytes.NewReader(data)}, rec2); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rec2.Bytes(), data) || len(rec2.ChunkIndex) != len(rec.ChunkIndex) {
				t.Error("streaming split differs")
			}
		})
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestCorpusRead(t *testing.T) {
	for _, cf := range corpusFiles {
		t.Run(cf.name, func(t *testing.T) {
			f, err := ReadFile(context.Background(), bytes.NewReader(readCorpus(t, cf.name)), 0)
			if err != nil {
				t.Fatal(err)
			}
			if f.Backend != cf.backend || int64(f.Frames()) != cf.frames || f.Footer == nil ||
				int64(f.Footer.TotalFrames) != cf.frames || len(f.Footer.GameTime) != int(cf.frames) {
				t.Fatalf("backend %v frames %d footer %+v", f.Backend, f.Frames(), f.Footer != nil)
			}
			if f.Header.FormatMajor != 1 || f.Header.FormatMinor != 0 || !strings.Contains(f.Header.Schema, "property_mapping") {
				t.Errorf("header %+v", f.Header)
			}
			if f.Footer.GameTime[1] != 166666 || f.Footer.PayloadChecksum != 0 || len(f.Footer.Events) != 0 {
				t.Errorf("footer game_time %v checksum %d events %d", f.Footer.GameTime[:2], f.Footer.PayloadChecksum, len(f.Footer.Events))
			}
			if cf.name == "arena_from_proto_ds.vtx" {
				e := f.Footer.Chunks[0]
				if e != (IndexEntry{StartFrame: 0, EndFrame: 499, FileOffset: 1052, Size: 260395}) {
					t.Errorf("chunk entry 0 = %+v", e)
				}
			}
			fr := f.Chunks[0].Frames[0]
			if len(fr.Buckets) != 1 {
				t.Fatalf("%d buckets", len(fr.Buckets))
			}
			bk := fr.Buckets[0]
			if cf.players == 21 && (len(bk.Entities) != 11 || len(bk.UniqueIDs) != 11 || bk.Entities[10].TypeID != 2) {
				t.Errorf("bucket: %d entities, ids %v", len(bk.Entities), bk.UniqueIDs)
			}
		})
	}
}

// TestCorpusBackendsAgree checks that the protobuf and FlatBuffers files of
// the same recording decode to the same frames.
func TestCorpusBackendsAgree(t *testing.T) {
	ctx := context.Background()
	p, err := ReadFile(ctx, bytes.NewReader(readCorpus(t, "arena_from_proto_ds.vtx")), 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(ctx, bytes.NewReader(readCorpus(t, "arena_from_fbs_ds.vtx")), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 3, 7} {
		if !reflect.DeepEqual(p.Chunks[i].Frames, f.Chunks[i].Frames) {
			t.Errorf("chunk %d: frames differ between backends", i)
		}
	}
}

func TestCorpusFrames(t *testing.T) {
	for _, name := range []string{"arena_from_proto_ds.vtx", "arena_from_fbs_ds.vtx"} {
		t.Run(name, func(t *testing.T) {
			rec := formatstest.Split(t, Codec{}, readCorpus(t, name))
			var got []formats.Frame
			err := (Codec{}).Frames(context.Background(), rec.Source(), formats.Ticks(495, 504), func(f formats.Frame) error {
				got = append(got, f)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Reads != 2 || len(got) != 10 || got[0].Tick != 495 || got[9].Tick != 504 {
				t.Fatalf("reads %d, %d frames", rec.Reads, len(got))
			}
			fd := got[5].Data.(FrameData)
			if fd.GameTime == nil || absf(float64(*fd.GameTime)-500.0/60) > 1e-6 || fd.Buckets[0].Name != "entity" {
				t.Errorf("frame 500: time %v bucket %q", fd.GameTime, fd.Buckets[0].Name)
			}
			e := fd.Buckets[0].Entities[0]
			if e.ID != "player_0" || e.Type != "Player" || e.Props["UniqueID"] != "player_0" {
				t.Errorf("entity %+v", e)
			}
			for _, k := range []string{"Name", "Team", "Health", "Armor", "Position", "Rotation", "Velocity", "IsAlive", "Score", "Deaths"} {
				if _, ok := e.Props[k]; !ok {
					t.Errorf("property %s missing from %v", k, e.Props)
				}
			}
			var ms EntityData
			for _, e := range fd.Buckets[0].Entities {
				if e.ID == "match_001" {
					ms = e
				}
			}
			if ms.Type != "MatchState" || ms.Props["Phase"] == nil || ms.Props["TimeRemaining"] == nil {
				t.Errorf("match state %+v", ms)
			}
			js, err := json.Marshal(got[0])
			if err != nil || !bytes.Contains(js, []byte(`"Health":`)) {
				t.Errorf("json %s: %v", js, err)
			}
			// One chunk for a range inside it.
			rec.Reads = 0
			n := 0
			if err := (Codec{}).Frames(context.Background(), rec.Source(), formats.Ticks(3550, -1), func(formats.Frame) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if rec.Reads != 1 || n != 50 {
				t.Errorf("tail: reads %d frames %d", rec.Reads, n)
			}
		})
	}
}

func absf(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestCorpusClip(t *testing.T) {
	ctx := context.Background()
	for _, cf := range corpusFiles {
		t.Run(cf.name, func(t *testing.T) {
			data := readCorpus(t, cf.name)
			orig, err := ReadFile(ctx, bytes.NewReader(data), 0)
			if err != nil {
				t.Fatal(err)
			}
			var all []Frame
			for _, c := range orig.Chunks {
				all = append(all, c.Frames...)
			}
			from, to := int64(490), int64(1510)
			if cf.frames < 100 {
				from, to = 3, 20
			}
			rec := formatstest.Split(t, Codec{}, data)
			var out bytes.Buffer
			if err := (Codec{}).Clip(ctx, rec.Source(), formats.Ticks(from, to), &out); err != nil {
				t.Fatal(err)
			}
			clip, err := ReadFile(ctx, bytes.NewReader(out.Bytes()), 0)
			if err != nil {
				t.Fatal(err)
			}
			n := to - from + 1
			if clip.Backend != cf.backend || int64(clip.Frames()) != n || len(clip.Warnings) != 0 ||
				clip.Footer == nil || int64(clip.Footer.TotalFrames) != n {
				t.Fatalf("clip: backend %v frames %d warnings %v", clip.Backend, clip.Frames(), clip.Warnings)
			}
			var got []Frame
			for _, c := range clip.Chunks {
				got = append(got, c.Frames...)
			}
			if !reflect.DeepEqual(got, all[from:to+1]) {
				t.Error("clip frames differ from the source's")
			}
			if !reflect.DeepEqual(clip.Footer.GameTime, orig.Footer.GameTime[from:to+1]) ||
				!reflect.DeepEqual(clip.Footer.CreatedUTC, orig.Footer.CreatedUTC[from:to+1]) {
				t.Error("clip times differ from the source's")
			}
			if clip.Header.ReplayUUID != orig.Header.ReplayUUID || clip.Header.Schema != orig.Header.Schema {
				t.Error("clip header differs")
			}
			crec := formatstest.Split(t, Codec{}, out.Bytes())
			if crec.Metadata.Ticks != n || len(crec.Metadata.Warnings) != 0 {
				t.Errorf("clip metadata %+v", crec.Metadata)
			}
			if err := (Codec{}).Clip(ctx, rec.Source(), formats.Ticks(cf.frames+10, -1), io.Discard); !errors.Is(err, ErrEmptyRange) {
				t.Errorf("clip past the end: %v", err)
			}
		})
	}
}

func TestCorpusMissingFooter(t *testing.T) {
	for _, cf := range corpusFiles {
		t.Run(cf.name, func(t *testing.T) {
			data := readCorpus(t, cf.name)
			f := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
			cut := data[:len(data)-8-f]
			rec := formatstest.Split(t, Codec{}, cut)
			m := rec.Metadata
			if len(rec.TrailerData) != 0 || len(rec.ChunkIndex) != len(cf.chunkFrames) || m.Ticks != cf.frames {
				t.Fatalf("trailer %d chunks %d ticks %d", len(rec.TrailerData), len(rec.ChunkIndex), m.Ticks)
			}
			if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "footer missing") {
				t.Errorf("warnings %v", m.Warnings)
			}
			if c := rec.ChunkIndex[1]; c.Time != time.Duration(c.StartTick)*time.Second/60 {
				t.Errorf("chunk 1 time %v", c.Time)
			}
			n := 0
			if err := (Codec{}).Frames(context.Background(), rec.Source(), formats.All(), func(formats.Frame) error { n++; return nil }); err != nil || int64(n) != cf.frames {
				t.Errorf("frames %d: %v", n, err)
			}
			var out bytes.Buffer
			if err := (Codec{}).Clip(context.Background(), rec.Source(), formats.Ticks(0, 9), &out); err != nil {
				t.Fatal(err)
			}
			if clip := formatstest.Split(t, Codec{}, out.Bytes()); clip.Metadata.Ticks != 10 || len(clip.Metadata.Warnings) != 0 {
				t.Errorf("clip of recovered file: %+v", clip.Metadata)
			}
		})
	}
}

// TestSplitAllocations checks that ingest does not allocate per frame or
// entity: 3600 frames of 11-21 entities split in well under 3600
// allocations.
func TestSplitAllocations(t *testing.T) {
	data := readCorpus(t, "arena_from_proto_ds.vtx")
	allocs := testing.AllocsPerRun(2, func() {
		if _, err := (Codec{}).Split(context.Background(), bytes.NewReader(data), &formatstest.Recording{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1000 {
		t.Errorf("Split made %.0f allocations for 3600 frames", allocs)
	}
}

// TestProtobufEncoderMatchesSDK decodes every blob of the SDK-written
// protobuf file and encodes it again: our encoder reproduces the SDK's
// serialization byte for byte (field order, packing, proto3 defaults).
func TestProtobufEncoderMatchesSDK(t *testing.T) {
	rec := formatstest.Split(t, Codec{}, readCorpus(t, "arena_from_proto_ds.vtx"))
	d := NewDecoder(0)
	defer d.Close()
	unpack := func(blob []byte) []byte {
		raw, err := d.Unpack(blob)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	raw := unpack(rec.HeaderData[8:])
	h, err := pbHeader(raw)
	if err != nil || !bytes.Equal(pbEncodeHeader(nil, h), raw) {
		t.Errorf("header re-encodes differently (%v)", err)
	}
	for i, piece := range rec.ChunkBytes {
		raw := unpack(piece[4:])
		c, err := pbChunk(raw)
		if err != nil || !bytes.Equal(pbEncodeChunk(nil, c), raw) {
			t.Errorf("chunk %d re-encodes differently (%v)", i, err)
		}
	}
	tr := rec.TrailerData
	raw = unpack(tr[:len(tr)-8])
	f, err := pbFooter(raw)
	if err != nil || !bytes.Equal(pbEncodeFooter(nil, f), raw) {
		t.Errorf("footer re-encodes differently (%v)", err)
	}
}
