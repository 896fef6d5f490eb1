package query

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/ingest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

// TestGrowRewritesOpenBlock grows a live recording in several steps,
// syncing the index after each, with blocks of 5 events so that grows end
// inside blocks (the last, partial block is written again with the new
// events): the index must then hold every event once, and answer as an
// index rebuilt from the catalog does.
func TestGrowRewritesOpenBlock(t *testing.T) {
	dir, a := newTestArchive(t)
	ctx := context.Background()
	open := func(name string) *Index {
		ix, err := OpenWith(filepath.Join(dir, name), Options{NoSync: true, MaxEvents: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		ix.blockEvents = 5
		return ix
	}
	ix := open("live")
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 60 * time.Second, Players: 6, Seed: 9, CommandsPerHour: 3600})
	file := game
	path := filepath.Join(t.TempDir(), "game.teehistorian")
	p := &ingest.Pipeline{Archive: a, Codecs: all.Codecs()}
	var id string
	for i := 1; i <= 7; i++ {
		if err := os.WriteFile(path, file[:len(file)*i/7], 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := p.Grow(ctx, path, i == 7)
		if err != nil {
			t.Fatal(err)
		}
		if g.ID != (uuid.UUID{}) {
			id = g.ID.String()
		}
		if _, err := Sync(ctx, ix, a); err != nil {
			t.Fatal(err)
		}
	}
	if id == "" {
		t.Fatal("no recording grew")
	}
	rb := open("rebuilt")
	if _, err := rebuildInto(ctx, rb, a); err != nil {
		t.Fatal(err)
	}
	want, _ := rb.DocCount()
	if n, err := ix.DocCount(); err != nil || n != want || want < 20 {
		t.Errorf("DocCount %d (%v) after grows, %d rebuilt", n, err, want)
	}
	for _, q := range []string{"kind:join", "kind:command", "kind:chat", "kind:drop", "kind:finish", "client"} {
		got, err := ix.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := rb.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		got.Took, ref.Took = 0, 0
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("%s: after grows %s, rebuilt %s", q, summary(got), summary(ref))
		}
	}
}

// TestLiveTextInParts grows a live recording in 48 steps, syncing the
// index after each: the commands each grow brings are found at once (also
// with a player term, and excluded by a negated one), the recording's
// parts stay at most log2(grows)+1, and once sealed the parts are gone and
// the index answers as one rebuilt from the catalog.
func TestLiveTextInParts(t *testing.T) {
	dir, a := newTestArchive(t)
	ctx := context.Background()
	ix, err := OpenWith(filepath.Join(dir, "live"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 4 * time.Minute, Players: 4, Seed: 5, CommandsPerHour: 3600})
	path := filepath.Join(t.TempDir(), "game.teehistorian")
	p := &ingest.Pipeline{Archive: a, Codecs: all.Codecs()}
	const steps = 48
	var id uuid.UUID
	found := 0
	for i := 1; i <= steps; i++ {
		if err := os.WriteFile(path, game[:len(game)*i/steps], 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := p.Grow(ctx, path, i == steps)
		if err != nil {
			t.Fatal(err)
		}
		if g.ID != (uuid.UUID{}) {
			id = g.ID
		}
		if _, err := Sync(ctx, ix, a); err != nil {
			t.Fatal(err)
		}
		if id == (uuid.UUID{}) || i == steps {
			continue
		}
		// The last command so far, and a player of the recording.
		last, who := "", ""
		if err := a.EachEvent(id, func(_ int, e *formats.Event) error {
			if e.Kind == "command" && strings.HasPrefix(e.Text, "rank ") {
				last = e.Text
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		m, err := a.Manifest(id)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Meta.Players) > 0 {
			who = m.Meta.Players[0].Name
		}
		lt, err := ix.liveText(id.String())
		if err != nil || lt == nil {
			t.Fatalf("grow %d: no live state (%v)", i, err)
		}
		size := 0
		for j, p := range lt.Parts {
			size += p.Size
			if j > 0 && lt.Parts[j-1].Size <= 2*p.Size {
				t.Errorf("grow %d: part %d of %d bytes follows one of %d", i, j, p.Size, lt.Parts[j-1].Size)
			}
		}
		if max := bits.Len(uint(size)) + 1; len(lt.Parts) > max || len(lt.Parts) == 0 {
			t.Errorf("grow %d: %d parts of %d bytes, want 1 to %d", i, len(lt.Parts), size, max)
		}
		if last == "" {
			continue
		}
		found++
		for _, c := range []struct {
			q    string
			want int
		}{
			{fmt.Sprintf("cmd:%q", last), 1},
			{fmt.Sprintf("%q", last), 1},
			{fmt.Sprintf("player:%q cmd:%q", who, last), 1},
			{fmt.Sprintf("-cmd:%q", last), 0},
			{fmt.Sprintf("cmd:\"rank %d\"", 100_000+i), 0},
		} {
			res, err := ix.Search(ctx, c.q, 10)
			if err != nil {
				t.Fatalf("grow %d: %s: %v", i, c.q, err)
			}
			if len(res.Hits) != c.want || c.want == 1 && res.Hits[0].ID != id.String() {
				t.Errorf("grow %d: %s: %s, want %d hit", i, c.q, summary(res), c.want)
			}
		}
	}
	if found < steps/2 {
		t.Fatalf("commands in only %d of %d grows", found, steps)
	}
	if lt, err := ix.liveText(id.String()); err != nil || lt != nil {
		t.Errorf("sealed: live state %+v (%v), want none", lt, err)
	}
	rb, err := OpenWith(filepath.Join(dir, "rebuilt"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if _, err := rebuildInto(ctx, rb, a); err != nil {
		t.Fatal(err)
	}
	ids := func(ix *Index) []string {
		all, err := ix.docIDsOf(ctx, []string{id.String()})
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	if got, want := ids(ix), ids(rb); !reflect.DeepEqual(got, want) {
		t.Errorf("sealed: documents %q, rebuilt %q", got, want)
	}
	for _, q := range []string{`cmd:"rank 3"`, "kind:command", "rank", "-cmd:rank"} {
		got, err := ix.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := rb.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		got.Took, ref.Took = 0, 0
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("%s: after grows %s, rebuilt %s", q, summary(got), summary(ref))
		}
	}
}
