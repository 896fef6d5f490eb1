// Tests of the writer against the hand-derived vectors in testdata (see
// testdata/README.md): primitives, events, index entries, metadata and a
// tiny whole file, byte for byte.

package hcrp

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

var update = flag.Bool("update", false, "rewrite testdata/tiny.hcrp from the writer")

type hexLine struct {
	b       []byte
	comment string
}

// readHex reads a .hex vector file: hex bytes, then an optional "# comment".
// Lines that are only comments are skipped.
func readHex(t *testing.T, name string) []hexLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []hexLine
	for _, line := range strings.Split(string(data), "\n") {
		code, comment, _ := strings.Cut(line, "#")
		code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
		if code == "" {
			continue
		}
		b, err := hex.DecodeString(code)
		if err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		out = append(out, hexLine{b, strings.TrimSpace(comment)})
	}
	return out
}

func joinHex(lines []hexLine) []byte {
	var b []byte
	for _, l := range lines {
		b = append(b, l.b...)
	}
	return b
}

func TestVarIntVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/varint.hex")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		head, hx, _ := strings.Cut(line, ":")
		kind, num, _ := strings.Cut(head, " ")
		want, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(hx), " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		var back int64
		var end int
		if kind == "varint" {
			got = AppendVarInt(nil, int32(v))
			var b32 int32
			b32, end, err = readVarInt(want, 0)
			back = int64(b32)
		} else {
			got = AppendVarLong(nil, v)
			back, end, err = readVarLong(want, 0)
		}
		if !bytes.Equal(got, want) || err != nil || back != v || end != len(want) {
			t.Errorf("%s %d: wrote % x, want % x; read back %d (%d bytes, %v)", kind, v, got, want, back, end, err)
		}
		n++
	}
	if n != 15 {
		t.Fatalf("checked %d vectors, want 15", n)
	}
}

// vectorEvents are the events of testdata/events.hex, in file order.
var vectorEvents = []Event{
	{Type: DeltaMove, Entity: 0, Pos: Pos{X: 1, Y: -0.5, Z: 0.25, Yaw: 90, Pitch: -45}},
	{Type: AbsoluteMove, Entity: 3, Pos: Pos{X: 1.5, Y: 64, Z: -2.25}, Velocity: Vec3{X: 0.5}},
	{Type: AbsoluteMove, Entity: 3, Velocity: Vec3{X: 5, Z: -1}},
	{Type: EntityState, Entity: 1, Pose: 5, State: 0x0a},
	{Type: HandAnimation, Entity: 2, Hand: 1},
	{Type: ItemUse, Entity: 2},
	{Type: ItemUse, Entity: 2, HasHand: true, Hand: 0},
	{Type: SetItem, Entity: 0, Items: []ItemSlot{{Slot: 45, NBT: []byte{0x0a, 0x00}}}},
	{Type: ChangeHeldSlot, Entity: 0, Slot: 8},
	{Type: SetBlock, Block: BlockPos{X: -1, Y: 64, Z: 2}, BlockState: 1},
	{Type: SpawnEntity, Entity: 1, EntityType: 149, Pos: Pos{Y: 64}},
	{Type: DestroyEntity, Entity: 300},
	{Type: RunStart},
	{Type: CheckpointReached, Checkpoint: "cp-1", RunTime: 12345},
	{Type: CheckpointReset, Reset: 6, RunTime: 1000},
	{Type: RunEnd, End: EndFinish, RunTime: 65432},
	{Type: ClearGhostBlocks},
}

func TestEventVectors(t *testing.T) {
	lines := readHex(t, "events.hex")
	if len(lines) != len(vectorEvents) || len(lines) != int(numEventTypes)+2 {
		t.Fatalf("%d vectors for %d events", len(lines), len(vectorEvents))
	}
	for i, l := range lines {
		e := vectorEvents[i]
		got, err := AppendEvent(nil, &e)
		if err != nil || !bytes.Equal(got, l.b) {
			t.Errorf("%s: wrote % x (%v), want % x", l.comment, got, err, l.b)
			continue
		}
		var back Event
		end, err := decodeEvent(l.b, 0, &back)
		if err != nil || end != len(l.b) {
			t.Errorf("%s: decode: end %d of %d: %v", l.comment, end, len(l.b), err)
			continue
		}
		again, _ := AppendEvent(nil, &back)
		if !bytes.Equal(again, l.b) {
			t.Errorf("%s: decoded and re-encoded to % x", l.comment, again)
		}
	}
	// Every event's fields marshal to JSON, non-finite numbers included.
	nan := Event{Type: AbsoluteMove, Pos: Pos{X: math.NaN(), Y: math.Inf(1), Yaw: float32(math.Inf(-1))}}
	for _, e := range append(vectorEvents, nan) {
		if _, err := json.Marshal(e.Fields()); err != nil {
			t.Errorf("%s: fields do not marshal: %v", e.Type, err)
		}
	}
	// Items must be one well-formed compound.
	for _, nb := range [][]byte{{0x08, 0, 0}, {0x0a}, {0x0a, 0x01, 0x00}, {0x0a, 0x00, 0x00}} {
		e := Event{Type: SetItem, Items: []ItemSlot{{Slot: 1, NBT: nb}}}
		if _, err := AppendEvent(nil, &e); err == nil {
			t.Errorf("set_item with item NBT % x accepted", nb)
		}
	}
	// The quantised values decode to what the tables say.
	var e Event
	decodeEvent(lines[0].b, 0, &e)
	if e.Pos != (Pos{X: 1, Y: -0.5, Z: 0.25, Yaw: 90, Pitch: -45}) {
		t.Errorf("delta_move decoded to %+v", e.Pos)
	}
	decodeEvent(lines[2].b, 0, &e)
	if d := e.Velocity.X - 5; d > 1e-3 || d < -1e-3 || e.Velocity.Z > -0.999 {
		t.Errorf("big-scale velocity decoded to %+v", e.Velocity)
	}
	decodeEvent(lines[9].b, 0, &e)
	if e.Block != (BlockPos{X: -1, Y: 64, Z: 2}) {
		t.Errorf("block position decoded to %+v", e.Block)
	}
}

func TestIndexVectors(t *testing.T) {
	want := []IndexEntry{
		{StartTick: 0, Ticks: 100, Flags: 1, Offset: 0, CompressedLen: 2000, UncompressedLen: 30000},
		{StartTick: 100, Ticks: 100, Flags: 0, Offset: 1<<32 | 0x1234, CompressedLen: 300, UncompressedLen: 128},
		{StartTick: 200, Ticks: 7, Flags: 1, Offset: 0x7fffffffffff, CompressedLen: 1, UncompressedLen: 1},
	}
	lines := readHex(t, "index.hex")
	for i, l := range lines {
		if got := AppendIndexEntry(nil, &want[i]); !bytes.Equal(got, l.b) {
			t.Errorf("entry %d: wrote % x, want % x", i, got, l.b)
		}
	}
	back, err := parseIndex(joinHex(lines), len(want), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if back[i] != want[i] {
			t.Errorf("entry %d: parsed %+v, want %+v", i, back[i], want[i])
		}
	}
	if seg, off := back[1].Segment(); seg != 1 || off != 0x1234 {
		t.Errorf("segment of entry 1: %d, %d", seg, off)
	}
}

func TestMetaVector(t *testing.T) {
	want := joinHex(readHex(t, "meta.hex"))
	m := &Meta{Map: "spire", Anticheat: []Flag{{Type: "fly", Tick: 40, Player: "p", Detail: "vl=3"}}}
	got, err := EncodeMeta(m)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("EncodeMeta = % x (%v), want % x", got, err, want)
	}
	back, err := DecodeMeta(want)
	if err != nil || back.Map != "spire" || len(back.Anticheat) != 1 || back.Anticheat[0] != m.Anticheat[0] {
		t.Fatalf("DecodeMeta = %+v, %v", back, err)
	}
	if empty, _ := EncodeMeta(nil); !bytes.Equal(empty, []byte{0x0a, 0x00}) {
		t.Fatalf("empty metadata = % x, want 0a 00", empty)
	}
}

// tinyOptions records the tiny vector file: 3 ticks, a snapshot at tick 0.
func tinyFile(t *testing.T) []byte {
	t.Helper()
	opts := Options{
		WorldID:      uuid.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		WorldVersion: make([]byte, 16),
		DataVersion:  4671,
		Start:        time.Date(2026, 8, 11, 12, 0, 0, 0, time.UTC),
		Meta:         &Meta{Map: "spire"},
		Snapshot: func(r *Recorder, tick int64) error {
			return r.Add(&Event{Type: SpawnEntity, Entity: 0, EntityType: 149, Pos: Pos{X: 0.5, Y: 64, Z: 0.5}})
		},
	}
	var buf bytes.Buffer
	r, err := NewRecorder(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	step := func(evs ...Event) {
		if err := r.StartTick(); err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			if err := r.Add(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	step(Event{Type: RunStart})
	step(Event{Type: DeltaMove, Pos: Pos{X: 0.25}, Velocity: Vec3{X: 0.25}})
	step()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTinyFileVector(t *testing.T) {
	got := tinyFile(t)
	pre := joinHex(readHex(t, "tiny-preamble.hex"))
	chunk := joinHex(readHex(t, "tiny-chunk.hex"))
	if len(got) < len(pre) || !bytes.Equal(got[:len(pre)], pre) {
		t.Fatalf("preamble differs from testdata/tiny-preamble.hex:\n got % x\nwant % x", got[:min(len(got), len(pre))], pre)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	raw, err := dec.DecodeAll(got[len(pre):], nil)
	if err != nil || !bytes.Equal(raw, chunk) {
		t.Fatalf("chunk decompresses to % x (%v), want % x", raw, err, chunk)
	}
	if *update {
		if err := os.WriteFile("testdata/tiny.hcrp", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile("testdata/tiny.hcrp")
	if err != nil || !bytes.Equal(got, golden) {
		t.Fatalf("writer output differs from testdata/tiny.hcrp (%v); rerun with -update after checking why", err)
	}
	rd, err := NewReader(bytes.NewReader(golden), int64(len(golden)))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rd.Seek(context.Background(), 2)
	if err != nil || st.Entities[0].Pos != (Pos{X: 0.75, Y: 64, Z: 0.5}) {
		t.Fatalf("state at tick 2: %+v, %v", st.Entities[0], err)
	}
}
