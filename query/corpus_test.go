package query

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/sc2replay"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/formats/vtx"
	"github.com/replayarchive/replay/ingest"
)

// isWordRune reports whether r can be part of a searchable word.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// quote makes s one query term value.
func quote(s string) string { return `"` + s + `"` }

// Every real file's players, map, server, commands and chat are findable
// with the query language, and a secret from a corpus file is not.
func TestCorpusIsSearchable(t *testing.T) {
	var dirs []string
	for _, sub := range []string{"teehistorian", "sc2replay", "vtx"} {
		dirs = append(dirs, formatstest.CorpusDir(t, sub))
	}
	dir, a := newTestArchive(t)
	p := &ingest.Pipeline{Archive: a, Codecs: []formats.Codec{teehistorian.New(), sc2replay.New(), vtx.Codec{}}}
	if err := p.Run(context.Background(), dirs, func(r ingest.FileResult) {
		if r.Outcome == ingest.OutcomeFailed {
			t.Errorf("%s", r.Err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	ix, err := OpenWith(filepath.Join(dir, "index"), Options{NoSync: true, MaxEvents: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := Sync(context.Background(), ix, a); err != nil {
		t.Fatal(err)
	}

	finds := func(q, id string) bool {
		t.Helper()
		res, err := ix.Search(context.Background(), q, 1000)
		if err != nil {
			t.Errorf("search %s: %v", q, err)
			return false
		}
		for _, h := range res.Hits {
			if h.ID == id {
				return true
			}
		}
		return false
	}
	counts := map[string]int{}
	err = a.List(context.Background(), func(m *archive.Manifest) error {
		id := m.ID.String()
		check := func(what, q string) {
			counts[m.Format+" "+what]++
			if !finds(q, id) {
				t.Errorf("%s %s (%s): %s does not find it", m.Format, id[:8], m.SourceName, q)
			}
		}
		if m.Meta.Map != "" {
			check("map", "map:"+quote(m.Meta.Map))
		}
		if m.Meta.Server != "" {
			check("server", "server:"+quote(m.Meta.Server))
		}
		if m.Meta.Session != "" {
			check("session", "session:"+quote(m.Meta.Session))
		}
		for _, pl := range m.Meta.Players {
			if pl.Name != "" && !strings.Contains(pl.Name, `"`) {
				check("player", "player:"+quote(pl.Name))
			}
			if pl.ID != "" && !strings.Contains(pl.ID, `"`) {
				check("player-id", "player-id:"+quote(pl.ID))
			}
		}
		if name := m.Meta.Attrs["replay_name"]; name != "" {
			check("name", quote(name))
		}
		evs, err := a.Events(m.ID)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			words := strings.Fields(ev.Text)
			if len(words) == 0 || strings.Contains(ev.Text, `"`) || !strings.ContainsFunc(ev.Text, isWordRune) {
				continue // punctuation-only text ("^^") has no searchable words
			}
			switch ev.Kind {
			case formats.EventCommand:
				check("command", "cmd:"+quote(words[0]))
			case formats.EventChat:
				check("chat", "chat:"+quote(ev.Text))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each kind of fact was actually checked, not skipped for lack of data.
	for _, k := range []string{
		"teehistorian map", "teehistorian server", "teehistorian player", "teehistorian command",
		"sc2replay map", "sc2replay player", "sc2replay player-id", "sc2replay chat",
		"vtx session", "vtx player-id", "vtx name",
	} {
		if counts[k] == 0 {
			t.Errorf("no %s was checked", k)
		}
	}
	t.Logf("checked: %v", counts)

	// A timeout code typed in a corpus file (SOURCES.md) is redacted before
	// it reaches the index.
	for _, q := range []string{"tjfekX6ScC8A3NkN", "tjfekx6scc8a3nkn", `cmd:"timeout tjfekX6ScC8A3NkN"`} {
		if res, err := ix.Search(context.Background(), q, 10); err != nil || res.Total != 0 {
			t.Errorf("secret search %s: %d hits, %v", q, res.Total, err)
		}
	}
	if res, _ := ix.Search(context.Background(), "cmd:timeout", 10); res.Total == 0 {
		t.Error("cmd:timeout finds nothing: the redaction test above proves nothing")
	}
}
