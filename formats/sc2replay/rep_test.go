// Side-by-side checks against s2prot's own high-level package rep (which
// reads the MPQ with icza/mpq): the metadata must agree on every corpus file
// rep can open, and the benchmarks time both on the same bytes.

package sc2replay

import (
	"bytes"
	"context"
	"errors"
	"html"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/icza/s2prot/rep"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

func TestAgainstRep(t *testing.T) {
	dir := formatstest.CorpusDir(t, "sc2replay")
	files := corpus(t)
	c := New()
	opened := 0
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			m, err := c.Metadata(data)
			if err != nil {
				t.Fatal(err)
			}
			r, err := rep.NewFromFile(filepath.Join(dir, name))
			if errors.Is(err, rep.ErrUnsupportedRepVersion) {
				if len(m.Warnings) == 0 || !strings.Contains(m.Warnings[0], "no protocol table for base build") {
					t.Errorf("rep has no protocol; we should warn that ours is the nearest table's decode, got warnings %q", m.Warnings)
				}
				return
			}
			if err != nil {
				t.Fatalf("rep: %v", err)
			}
			defer r.Close()
			opened++

			eq := func(what string, got, want any) {
				t.Helper()
				if got != want {
					t.Errorf("%s: ours %v, rep %v", what, got, want)
				}
			}
			eq("version", m.Attrs["version"], r.Header.VersionString())
			eq("base build", m.Attrs["base_build"], strconv.FormatInt(r.Header.BaseBuild(), 10))
			eq("loops", m.Ticks, r.Header.Loops())
			eq("map", m.Map, r.Details.Title())
			eq("end time", m.Attrs["end_time"], r.Details.Time().UTC().Format("2006-01-02T15:04:05Z07:00"))
			eq("game speed", m.Attrs["game_speed"], r.Details.GameSpeed().String())
			if exp := r.InitData.GameDescription.ExpLevel(); exp != rep.ExpLevelUnknown {
				eq("expansion", m.Attrs["expansion"], exp.String())
			}
			// rep's Duration is game time (loops/16); ours is real time.
			eq("game seconds", m.Attrs["game_seconds"], strconv.FormatFloat(r.Header.Duration().Seconds(), 'f', 2, 64))

			players := r.Details.Players()
			if len(m.Players) < len(players) {
				t.Fatalf("%d players, rep has %d in details", len(m.Players), len(players))
			}
			seen := map[string]bool{}
			for i, p := range players {
				ours := m.Players[i]
				key := "player." + strconv.Itoa(i) + "."
				// rep keeps the clan markup in the name; ours is clean with
				// the clan apart.
				raw, clan := html.UnescapeString(p.Name), m.Attrs[key+"clan"]
				if raw != ours.Name && raw != "["+clan+"]"+ours.Name && raw != "<"+clan+">"+ours.Name {
					t.Errorf("player %d: name %q clan %q, rep %q", i, ours.Name, clan, p.Name)
				}
				if p.Control() != rep.ControlComputer {
					eq("player "+strconv.Itoa(i)+" toon", ours.ID, p.Toon.String())
					seen[ours.ID] = true
				}
				if ours.Team != "observer" && r.Header.BaseBuild() >= 24764 {
					// rep's TeamID is details m_teamId, which s2prot itself
					// calls unreliable; before 2.0 we take the lobby slot's
					// team (TestCorpusSplit checks it against sc2reader).
					eq("player "+strconv.Itoa(i)+" team", ours.Team, strconv.FormatInt(p.TeamID()+1, 10))
				}
				eq("player "+strconv.Itoa(i)+" race", m.Attrs[key+"race"], p.Race().String())
				eq("player "+strconv.Itoa(i)+" result", m.Attrs[key+"result"], p.Result().String())
			}
			// Observers in the lobby but not in details.
			obs := 0
			for _, s := range r.InitData.LobbyState.Slots {
				if s.Observe() != rep.ObserveParticipant && s.Control() == rep.ControlHuman && s.ToonHandle() != "" && !seen[s.ToonHandle()] {
					obs++
				}
			}
			eq("lobby observers", len(m.Players)-len(players), obs)

			var chats []string
			for _, e := range r.MessageEvts {
				if e.Name == "Chat" {
					chats = append(chats, e.Stringv("string"))
				}
			}
			var ourChats []string
			for _, e := range m.Events {
				if e.Kind == formats.EventChat {
					ourChats = append(ourChats, e.Text)
				}
			}
			eq("chat count", len(ourChats), len(chats))
			for i := range min(len(chats), len(ourChats)) {
				eq("chat "+strconv.Itoa(i), ourChats[i], chats[i])
			}

			// Frames decode exactly the events rep decodes.
			rec := formatstest.Split(t, c, data)
			counts := map[string]int{}
			if err := c.Frames(context.Background(), rec.Source(), formats.All(), func(f formats.Frame) error {
				counts[f.Type]++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			for _, e := range r.GameEvts {
				want[e.Name]++
			}
			for _, e := range r.MessageEvts {
				want[e.Name]++
			}
			if r.TrackerEvts != nil {
				for _, e := range r.TrackerEvts.Evts {
					want[e.Name]++
				}
			}
			for k, v := range want {
				eq("frames of type "+k, counts[k], v)
			}
			eq("frame types", len(counts), len(want))
		})
	}
	if opened != 9 {
		t.Errorf("rep opened %d corpus files, want 9 (all but the LotV beta)", opened)
	}
}

// benchFiles returns the corpus files rep can open, and their total size.
func benchFiles(b *testing.B) ([][]byte, int64) {
	var out [][]byte
	var n int64
	for name, data := range corpus(b) {
		if name == "edge-2.5.5.37164-lotvbeta-no-protocol.SC2Replay" {
			continue
		}
		out = append(out, data)
		n += int64(len(data))
	}
	return out, n
}

// pass is one timed pass over the benchmark files.
type pass func(tb testing.TB)

// metadataPasses returns metadata-only extraction over files: ours is a
// full Split (read, MPQ checks, header, details, initData, chat) into a
// discarding writer; rep is rep.NewEvts with no event streams (header,
// details, initData, attributes, gamemetadata.json).
func metadataPasses(files [][]byte) (ours, theirs pass) {
	c := New()
	ours = func(tb testing.TB) {
		for _, data := range files {
			if _, err := c.Split(context.Background(), bytes.NewReader(data), formatstest.Discard{}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return ours, repPass(files, false)
}

// eventsPasses returns decoding every event: our Frames over the split
// recordings against rep.NewEvts with all three event streams.
func eventsPasses(tb testing.TB, files [][]byte) (ours, theirs pass) {
	c := New()
	var srcs []formats.Source
	for _, data := range files {
		srcs = append(srcs, formatstest.Split(tb, c, data).Source())
	}
	ours = func(tb testing.TB) {
		for _, src := range srcs {
			if err := c.Frames(context.Background(), src, formats.All(), func(formats.Frame) error { return nil }); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return ours, repPass(files, true)
}

// repPass opens every file with rep.NewEvts, with or without the event
// streams.
func repPass(files [][]byte, events bool) pass {
	return func(tb testing.TB) {
		for _, data := range files {
			r, err := rep.NewEvts(bytes.NewReader(data), events, events, events)
			if err != nil {
				tb.Fatal(err)
			}
			r.Close()
		}
	}
}

// sideBySide runs ours and rep as two sub-benchmarks.
func sideBySide(b *testing.B, total int64, ours, theirs pass) {
	for _, side := range []struct {
		name string
		run  pass
	}{{"ours", ours}, {"rep", theirs}} {
		b.Run(side.name, func(b *testing.B) {
			b.SetBytes(total)
			b.ReportAllocs()
			for b.Loop() {
				side.run(b)
			}
		})
	}
}

// BenchmarkMetadata times metadata-only extraction over the nine replays
// rep can open (see metadataPasses).
func BenchmarkMetadata(b *testing.B) {
	files, total := benchFiles(b)
	ours, theirs := metadataPasses(files)
	sideBySide(b, total, ours, theirs)
}

// BenchmarkEvents times decoding every event (see eventsPasses).
func BenchmarkEvents(b *testing.B) {
	files, total := benchFiles(b)
	ours, theirs := eventsPasses(b, files)
	sideBySide(b, total, ours, theirs)
}

// BenchmarkMetadataRatio alternates ours and rep inside every iteration, so
// load from other processes on a shared machine hits both alike, and
// reports each side's time per pass over the nine files and their ratio
// (rep-ns / ours-ns: above 1 means ours is faster).
func BenchmarkMetadataRatio(b *testing.B) {
	files, total := benchFiles(b)
	ours, theirs := metadataPasses(files)
	ratio(b, total, ours, theirs)
}

// BenchmarkEventsRatio is BenchmarkEvents with both sides alternating, as
// in BenchmarkMetadataRatio.
func BenchmarkEventsRatio(b *testing.B) {
	files, total := benchFiles(b)
	ours, theirs := eventsPasses(b, files)
	ratio(b, total, ours, theirs)
}

// ratio runs ours then theirs in every iteration and reports both times and
// theirs/ours.
func ratio(b *testing.B, bytes int64, ours, theirs pass) {
	var tOurs, tTheirs time.Duration
	b.SetBytes(bytes)
	for b.Loop() {
		t0 := time.Now()
		ours(b)
		t1 := time.Now()
		theirs(b)
		tOurs += t1.Sub(t0)
		tTheirs += time.Since(t1)
	}
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), "ours-ns/op")
	b.ReportMetric(float64(tTheirs.Nanoseconds())/float64(b.N), "rep-ns/op")
	b.ReportMetric(float64(tTheirs)/float64(tOurs), "rep/ours")
}

// TestFieldAgainstRep: the map's box (formats.Fielder) of every corpus
// replay rep can open is the size s2prot's rep decodes from the same
// file's initData, and the units Track places lie inside it.
func TestFieldAgainstRep(t *testing.T) {
	dir := formatstest.CorpusDir(t, "sc2replay")
	c := New()
	checked := 0
	for name, data := range corpus(t) {
		r, err := rep.NewFromFile(filepath.Join(dir, name))
		if err != nil {
			continue // the file without a protocol table: TestAgainstRep says why
		}
		gd := r.InitData.GameDescription
		w, h := float64(gd.MapSizeX()), float64(gd.MapSizeY())
		r.Close()
		rec := formatstest.Split(t, c, data)
		f, err := c.Field(context.Background(), rec.Source())
		if err != nil || f == nil {
			t.Errorf("%s: field %v, %v", name, f, err)
			continue
		}
		checked++
		if f.MinX != 0 || f.MinY != 0 || f.MaxX != w || f.MaxY != h || len(f.Shapes) != 1 || f.Shapes[0].Kind != "outline" {
			t.Errorf("%s: field %+v, rep's map size %gx%g", name, f, w, h)
		}
		last := rec.Source().Chunks()[0].EndTick()
		for _, p := range formatstest.Tracks(t, c, rec.Source(), formats.Ticks(0, last)) {
			if p.X < 0 || p.Y < 0 || p.X > w || p.Y > h {
				t.Errorf("%s: %s at (%g, %g) is outside the map's %gx%g", name, p.Track, p.X, p.Y, w, h)
				break
			}
		}
		t.Logf("%s: %gx%g", name, w, h)
	}
	if checked < 8 {
		t.Errorf("%d replays checked, want the 9 rep opens", checked)
	}
}
