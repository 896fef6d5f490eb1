// Tests of the Codec over the real corpus and generated files: exact
// split/reassembly, metadata facts, redaction, Frames reading only the
// chunks it needs, and clips that keep every tick's state.

package teehistorian

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// corpusFiles reads the teehistorian files of the shared corpus by base
// name.
func corpusFiles(t testing.TB) map[string][]byte {
	t.Helper()
	return formatstest.CorpusFiles(t, "teehistorian", "*.teehistorian")
}

// decodeAll returns every record of a file as strings.
func decodeAll(t testing.TB, file []byte) []string {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, it.String())
	}
}

// tickState is the state at the end of Tick (and of every later tick up to
// the next entry).
type tickState struct {
	Tick  int64
	State string
}

// tickStates decodes file and returns the positions of present characters
// and the inputs of every client at the end of tick from and of every tick in
// (from, to] that has records. State is constant between those ticks.
func tickStates(t testing.TB, file []byte, from, to int64) []tickState {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var out []tickState
	snap := func(st *State) string {
		var b strings.Builder
		for cid := range st.Clients {
			c := &st.Clients[cid]
			if c.Alive {
				fmt.Fprintf(&b, "p%d=%d,%d ", cid, c.X, c.Y)
			}
			if c.HasInput {
				fmt.Fprintf(&b, "i%d=%v ", cid, c.Input)
			}
		}
		return b.String()
	}
	// record notes the state at the end of the current tick, which lasts
	// until (excluding) tick next.
	record := func(next int64) {
		cur := rd.State().Tick
		if next <= from || cur > to {
			return
		}
		out = append(out, tickState{max(cur, from), snap(rd.State())})
	}
	for {
		it, err := rd.peek()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Tick > rd.State().Tick {
			record(it.Tick)
		}
		rd.commit()
	}
	record(to + 1)
	return out
}

// stateAt returns the state at the end of tick from a tickStates list.
func stateAt(list []tickState, tick int64) string {
	i := sort.Search(len(list), func(i int) bool { return list[i].Tick > tick })
	if i == 0 {
		return "(none)"
	}
	return list[i-1].State
}

func TestCorpusSplit(t *testing.T) {
	for name, file := range corpusFiles(t) {
		t.Run(name, func(t *testing.T) {
			want := decodeAll(t, file)
			for _, size := range []int{0, 1024, 4096} {
				rec := formatstest.Split(t, &Codec{ChunkSize: size}, file)
				if size == 1024 && len(file) > 8000 && len(rec.ChunkIndex) < 3 {
					t.Errorf("chunk size %d: only %d chunks", size, len(rec.ChunkIndex))
				}
				var total int64
				for i, c := range rec.ChunkIndex {
					if i > 0 && c.StartTick != rec.ChunkIndex[i-1].EndTick() {
						t.Errorf("chunk %d starts at %d, previous ends at %d", i, c.StartTick, rec.ChunkIndex[i-1].EndTick())
					}
					if len(c.Resume) > 4096 {
						t.Errorf("chunk %d resume is %d bytes", i, len(c.Resume))
					}
					total += c.Ticks
				}
				if len(rec.ChunkIndex) > 0 && total != rec.Metadata.Ticks {
					t.Errorf("chunks cover %d ticks, metadata says %d", total, rec.Metadata.Ticks)
				}
				// Frames over everything, chunk by chunk from resume states,
				// gives the same records as one sequential decode.
				var got []string
				err := New().Frames(context.Background(), rec.Source(), formats.All(), func(f formats.Frame) error {
					got = append(got, fmt.Sprintf("%d %s", f.Tick, f.Type))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("chunk size %d: Frames gave %d records, sequential decode %d", size, len(got), len(want))
				}
				for i := range got {
					if w := strings.SplitN(want[i], " ", 3); got[i] != w[0]+" "+w[1] {
						t.Fatalf("chunk size %d: record %d: Frames %q, decode %q", size, i, got[i], want[i])
					}
				}
			}
		})
	}
}

func eventTexts(m *formats.Metadata, kind string) []string {
	var out []string
	for _, e := range m.Events {
		if e.Kind == kind {
			out = append(out, e.Player+": "+e.Text)
		}
	}
	return out
}

func playerNames(m *formats.Metadata) []string {
	var out []string
	for _, p := range m.Players {
		out = append(out, p.Name)
	}
	return out
}

func TestCorpusMetadata(t *testing.T) {
	files := corpusFiles(t)
	split := func(name string) *formats.Metadata {
		file, ok := files[name]
		if !ok {
			t.Fatalf("corpus file %s missing", name)
		}
		return formatstest.Split(t, New(), file).Metadata
	}

	m := split("Tutorial.teehistorian")
	if m.ID.String() != "71995651-3c21-44f6-9f69-0125dd5a020e" || m.Session != m.ID.String() {
		t.Errorf("Tutorial id %s session %s", m.ID, m.Session)
	}
	if m.Map != "Tutorial" || m.Server != "TH Recording Server" || m.TickRate != 50 {
		t.Errorf("Tutorial map %q server %q rate %v", m.Map, m.Server, m.TickRate)
	}
	if m.Ticks != 15646 || m.Duration != 15645*20*time.Millisecond {
		t.Errorf("Tutorial ticks %d duration %v", m.Ticks, m.Duration)
	}
	if want := time.Date(2026, 6, 13, 19, 55, 11, 0, time.UTC); !m.Start.Equal(want) {
		t.Errorf("Tutorial start %v, want %v", m.Start, want)
	}
	if m.Attrs["version_minor"] != "19" || m.Attrs["map_sha256"] != "796a3716fe64657bfb8bc6af5f9422b197278919a9d875e43b9bbbcb73262fc0" ||
		m.Attrs["map_crc"] != "801ce63d" || m.Attrs["server_version"] != "0.6.4, 19.8.2 (cbb22df93df2d97c5b6630b1d84e80d95b3568a4)" ||
		m.Attrs["prng_description"] != "pcg-xsh-rr:085d53077058df76:ce63a3679ea35011" || m.Attrs["finished"] != "true" {
		t.Errorf("Tutorial attrs %v", m.Attrs)
	}
	if got := playerNames(m); fmt.Sprint(got) != "[p'*mac]" {
		t.Errorf("Tutorial players %q", got)
	}
	if got := eventTexts(m, formats.EventFinish); len(got) != 1 || got[0] != "p'*mac: finish in 4:55.68" {
		t.Errorf("Tutorial finishes %q", got)
	}
	if got := eventTexts(m, formats.EventCommand); fmt.Sprint(got) != "[p'*mac: timeout [redacted]]" {
		t.Errorf("Tutorial commands %q", got)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("Tutorial warnings %q", m.Warnings)
	}

	m = split("265107d7-cdcf-4876-bc00-159bca662955.teehistorian")
	if m.Map != "ctf5_spikes" || m.Attrs["version_minor"] != "6" || m.Attrs["game_type"] != "gCTF-test" {
		t.Errorf("265107d7 map %q attrs %v", m.Map, m.Attrs)
	}
	if got := eventTexts(m, formats.EventLogin); fmt.Sprint(got) != "[*lukure*: rcon login as default_mod (moderator)]" {
		t.Errorf("265107d7 logins %q", got)
	}
	if got := eventTexts(m, formats.EventCommand); got[len(got)-1] != "*lukure*: shutdown" {
		t.Errorf("265107d7 commands %q", got)
	}
	if got := eventTexts(m, formats.EventJoin); len(got) != 3 || !strings.Contains(got[1], "(0.7)") {
		t.Errorf("265107d7 joins %q", got)
	}
	if got := playerNames(m); !contains(got, "*lukure*") {
		t.Errorf("265107d7 players %q", got)
	}
	if p := m.Players[0]; p.ID != "default_mod" && len(m.Players) == 1 {
		t.Errorf("265107d7 player id %q", p.ID)
	}

	m = split("a227b0a8-bc1a-4946-b1f0-e663e1d6c8c1.teehistorian")
	if got := playerNames(m); len(got) != 4 || got[0] != "*lukure*" || got[2] != "SpeedTime" {
		t.Errorf("a227b0a8 players %q", got)
	}
	if got := eventTexts(m, formats.EventTeam); fmt.Sprint(got) != "[*lukure*: team 3 *lukure*: team 0]" {
		t.Errorf("a227b0a8 teams %q", got)
	}
	if got := eventTexts(m, formats.EventLogin); len(got) != 1 || !strings.Contains(got[0], "default_admin (admin)") {
		t.Errorf("a227b0a8 logins %q", got)
	}
	if got := eventTexts(m, formats.EventDrop); len(got) != 4 {
		t.Errorf("a227b0a8 drops %q", got)
	}
	if got := eventTexts(m, formats.EventJoin); len(got) != 4 || got[0] != "*lukure*: client 0 joined (0.6)" {
		t.Errorf("a227b0a8 joins %q", got)
	}

	m = split("5b62288c-8b75-4f51-b748-f9d9b3ab2ff7.teehistorian")
	if m.Ticks != 1 || len(m.Events) != 0 || m.Attrs["finished"] != "true" {
		t.Errorf("5b62288c ticks %d events %d attrs %v", m.Ticks, len(m.Events), m.Attrs)
	}

	for _, name := range []string{"7cee836b-aec8-44d9-9083-94d07d88bc05.teehistorian", "b4d0a2ef-da28-4b6d-8a22-53a72e75379a.teehistorian"} {
		m = split(name)
		if len(m.Warnings) != 1 || !strings.HasPrefix(m.Warnings[0], "file ends without FINISH at tick") || m.Attrs["finished"] != "false" {
			t.Errorf("%s warnings %q", name, m.Warnings)
		}
	}
	if m.Ticks != 10049 {
		t.Errorf("b4d0a2ef ticks %d", m.Ticks)
	}
	m = split("7cee836b-aec8-44d9-9083-94d07d88bc05.teehistorian")
	if got := eventTexts(m, formats.EventCommand); !contains(got, ": restart 10") {
		t.Errorf("7cee836b commands %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkClip clips [from, to] out of file and compares per-tick state.
func checkClip(t *testing.T, codec *Codec, file []byte, from, to int64) {
	t.Helper()
	rec := formatstest.Split(t, codec, file)
	var out bytes.Buffer
	rec.Reads = 0
	if err := codec.Clip(context.Background(), rec.Source(), formats.Ticks(from, to), &out); err != nil {
		t.Fatalf("clip %d..%d: %v", from, to, err)
	}
	covering := 0
	for _, c := range rec.ChunkIndex {
		if c.EndTick() > from && !formats.Ticks(from, to).Past(c.StartTick) {
			covering++
		}
	}
	if rec.Reads != covering {
		t.Errorf("clip %d..%d read %d chunks, %d cover the range", from, to, rec.Reads, covering)
	}
	clip := out.Bytes()
	if !bytes.HasPrefix(clip, rec.HeaderData) {
		t.Fatalf("clip does not start with the original header")
	}
	// The clip is itself a valid file that splits and ends with FINISH.
	crec := formatstest.Split(t, New(), clip)
	if crec.Metadata.Attrs["finished"] != "true" || len(crec.Metadata.Warnings) != 0 {
		t.Fatalf("clip metadata %v warnings %q", crec.Metadata.Attrs, crec.Metadata.Warnings)
	}
	end := to
	if end < 0 {
		end = rec.Metadata.Ticks - 1
	}
	want := tickStates(t, file, from, end)
	got := tickStates(t, clip, from, end)
	if len(want) == 0 || want[0].Tick != from || len(got) == 0 || got[0].Tick != from {
		t.Fatalf("clip %d..%d: no state at the first tick (original %d entries, clip %d)", from, to, len(want), len(got))
	}
	for _, list := range [][]tickState{want, got} {
		for _, e := range list {
			if w, g := stateAt(want, e.Tick), stateAt(got, e.Tick); w != g {
				t.Fatalf("clip %d..%d: tick %d:\n got %s\nwant %s", from, to, e.Tick, g, w)
			}
		}
	}
}

func TestClipCorpus(t *testing.T) {
	for name, file := range corpusFiles(t) {
		t.Run(name, func(t *testing.T) {
			rec := formatstest.Split(t, New(), file)
			last := rec.Metadata.Ticks - 1
			codec := &Codec{ChunkSize: 2048}
			for _, r := range [][2]int64{{0, -1}, {0, last / 3}, {1, 10}, {last / 3, last / 2}, {last / 2, -1}, {last, last}, {last - 1, -1}} {
				if r[0] < 0 || r[0] > last {
					continue
				}
				checkClip(t, codec, file, r[0], r[1])
			}
		})
	}
}

func TestDetect(t *testing.T) {
	c := New()
	if c.Name() != "teehistorian" {
		t.Errorf("Name %q", c.Name())
	}
	for name, file := range corpusFiles(t) {
		if !c.Detect(file[:min(len(file), formats.DetectSize)]) {
			t.Errorf("%s not detected", name)
		}
	}
	for _, b := range [][]byte{nil, Magic[:15], []byte("{\"version\":\"2\"}"), bytes.Repeat([]byte{0x69}, 100)} {
		if c.Detect(b) {
			t.Errorf("Detect(%x) = true", b)
		}
	}
}

// TestHeaderOnly covers DDNet's "Empty" case: a header and no records.
func TestHeaderOnly(t *testing.T) {
	hj, _ := testHeader().MarshalJSON()
	file := append(append(Magic[:], hj...), 0)
	rec := formatstest.Split(t, New(), file)
	if len(rec.ChunkIndex) != 0 || rec.Metadata.Ticks != 0 || rec.Metadata.Attrs["finished"] != "false" {
		t.Fatalf("chunks %d ticks %d attrs %v", len(rec.ChunkIndex), rec.Metadata.Ticks, rec.Metadata.Attrs)
	}
	if err := New().Frames(context.Background(), rec.Source(), formats.All(), func(formats.Frame) error {
		t.Fatal("frame from an empty recording")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := New().Clip(context.Background(), rec.Source(), formats.All(), &out); err != nil {
		t.Fatal(err)
	}
	if want := append(bytes.Clone(file), 0x40); !bytes.Equal(out.Bytes(), want) {
		t.Errorf("clip of an empty recording: % x", out.Bytes()[len(file):])
	}
}

// TestWalkerHeaderCopied: a pooled walker keeps the header it parsed while
// the next source's header bytes are the same, and a source that reuses
// the memory its Header returned does not change the kept header under it.
func TestWalkerHeaderCopied(t *testing.T) {
	block := func(mapName string) []byte {
		h := testHeader()
		h.MapName = mapName
		hj, err := h.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return append(append(Magic[:], hj...), 0)
	}
	a, b := block("Kobra 3 Solo"), block("Kobra 4 Solo!")
	shared := make([]byte, 0, len(a)+len(b)) // one buffer a source reuses
	w := &chunkWalker{pooled: true}
	if err := w.header(append(shared[:0], a...)); err != nil {
		t.Fatal(err)
	}
	first := w.hdr
	if err := w.header(append(shared[:0], b...)); err != nil {
		t.Fatal(err)
	}
	if w.hdr == first || w.hdr.MapName != "Kobra 4 Solo!" {
		t.Fatalf("after the second header the walker has map %q (parsed again: %v)", w.hdr.MapName, w.hdr != first)
	}
	second := w.hdr
	if err := w.header(b); err != nil || w.hdr != second {
		t.Fatalf("the same header bytes were parsed again: %v", err)
	}
	copy(shared[:len(b)], bytes.Repeat([]byte{'x'}, len(b)))
	if !bytes.Equal(w.hdr.Raw, b) {
		t.Fatal("the kept header changed with the source's memory")
	}
	if err := w.header([]byte("not a header")); err == nil || w.hdr != nil {
		t.Fatalf("a bad header: err %v, kept %v", err, w.hdr)
	}
}
