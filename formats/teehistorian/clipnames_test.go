package teehistorian

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// TestClipKeepsNames clips corpus files from ticks in mid-game and ingests
// the clips: each names every player the original names at that moment
// (those connected at the clip's first tick and those who join later),
// and its events from that tick on (commands, joins, drops) name the same
// player and account as the original's. Files before version_minor 8 name
// players only in start-info messages, which a clip held only when they
// fell in its range; a login before the clip was lost too. Each file is
// clipped as archived now and as an older archive holds it (oldLayout:
// chunks whose resume states predate the clients' start-info messages and
// logins): the same names either way.
func TestClipKeepsNames(t *testing.T) {
	files := corpusFiles(t)
	for _, layout := range []string{"now", "old"} {
		t.Run(layout, func(t *testing.T) { clipKeepsNames(t, files, layout == "old") })
	}
}

func clipKeepsNames(t *testing.T, files map[string][]byte, old bool) {
	for _, tc := range []struct {
		file string
		from int64
	}{
		{"a227b0a8-bc1a-4946-b1f0-e663e1d6c8c1.teehistorian", 2200},
		{"a227b0a8-bc1a-4946-b1f0-e663e1d6c8c1.teehistorian", 2300},
		{"7cee836b-aec8-44d9-9083-94d07d88bc05.teehistorian", 600},
		{"a227b0a8-bc1a-4946-b1f0-e663e1d6c8c1.teehistorian", 2900}, // after p'*'s rcon login
		{"265107d7-cdcf-4876-bc00-159bca662955.teehistorian", 27300},
		{"265107d7-cdcf-4876-bc00-159bca662955.teehistorian", 27900}, // after *lukure*'s
		{"Tutorial.teehistorian", 9000},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.file[:8], tc.from), func(t *testing.T) {
			file, ok := files[tc.file]
			if !ok {
				t.Fatalf("%s is not in the corpus", tc.file)
			}
			// Small chunks: the clip starts in a chunk of its own, from
			// that chunk's resume state, as in a long file.
			c := &Codec{ChunkSize: 1 << 10}
			orig := formatstest.Split(t, c, file)
			if old {
				oldLayout(t, orig)
			}
			var out bytes.Buffer
			if err := c.Clip(context.Background(), orig.Source(), formats.Ticks(tc.from, -1), &out); err != nil {
				t.Fatal(err)
			}
			clip := formatstest.Split(t, New(), out.Bytes())
			if len(clip.Metadata.Warnings) != 0 {
				t.Errorf("the clip's warnings: %q", clip.Metadata.Warnings)
			}
			want := namedAt(orig.Metadata, tc.from)
			got := playerNames(clip.Metadata)
			slices.Sort(got)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("the clip names %q, want %q (the original's players at tick %d and after)", got, want, tc.from)
			}
			if w, g := eventsFrom(orig.Metadata, tc.from), eventsFrom(clip.Metadata, tc.from); !slices.Equal(g, w) {
				t.Errorf("the clip's events from tick %d:\n%s\nwant the original's:\n%s", tc.from, strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			// The clip is a valid file to the codec's own reader to its
			// FINISH, record by record.
			decodeAll(t, out.Bytes())
		})
	}
}

var clientRE = regexp.MustCompile(`^client (\d+) `)

// namedAt lists, sorted, the names of the players connected at tick from
// (by the original's joins and drops before it) and of the events from it
// on.
func namedAt(m *formats.Metadata, from int64) []string {
	who := map[string]string{} // client slot -> name
	set := map[string]bool{}
	for _, e := range m.Events {
		if e.Tick >= from {
			if e.Player != "" {
				set[e.Player] = true
			}
			continue
		}
		s := clientRE.FindStringSubmatch(e.Text)
		if s == nil {
			continue
		}
		switch e.Kind {
		case formats.EventJoin:
			who[s[1]] = e.Player
		case formats.EventDrop:
			delete(who, s[1])
		}
	}
	for _, n := range who {
		if n != "" {
			set[n] = true
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// eventsFrom lists the events from tick from on with who they name.
func eventsFrom(m *formats.Metadata, from int64) []string {
	var out []string
	for _, e := range m.Events {
		if e.Tick >= from {
			out = append(out, fmt.Sprintf("%d %s who=%q account=%q %s", e.Tick, e.Kind, e.Player, e.PlayerID, e.Text))
		}
	}
	return out
}

// A resume state carrying a client's name message and login reads back
// the same, and one without them is written in the version older builds
// read.
func TestResumeNameMsgAndAuth(t *testing.T) {
	var st State
	st.Reset()
	st.Clients[3].Connected = true
	if b := appendResume(nil, &st); b[0] != resumeVersion {
		t.Errorf("a state without name messages or logins is resume version %d, want %d", b[0], resumeVersion)
	}
	st.Clients[3].Intro = &Intro{NameMsg: []byte{0x28, 'k', 'i', 't', 0}}
	st.Clients[5].Intro = &Intro{AuthKind: ExAuthLogin, Auth: []byte{5, 2, 'a', 'd', 'm', 0}}
	b := appendResume(nil, &st)
	if b[0] != resumeVersionEx {
		t.Errorf("resume version %d, want %d", b[0], resumeVersionEx)
	}
	var back State
	if err := decodeResume(&back, b); err != nil {
		t.Fatal(err)
	}
	if b3, b5 := back.Clients[3].Intro, back.Clients[5].Intro; b3 == nil || b5 == nil || !bytes.Equal(b3.NameMsg, st.Clients[3].Intro.NameMsg) ||
		b5.AuthKind != ExAuthLogin || !bytes.Equal(b5.Auth, st.Clients[5].Intro.Auth) {
		t.Errorf("read back %+v and %+v", b3, b5)
	}
	// A version 1 state may not carry them.
	b[0] = resumeVersion
	if decodeResume(&back, b) == nil {
		t.Error("a version 1 resume with a name message was read")
	}
}

// oldLayout rewrites rec's chunks' resume states as archives written
// before resume version 2 hold them: the same chunks of the same native
// bytes, each state without the clients' start-info messages and logins
// (Intro), so in version 1. The chunks' bytes are untouched: an archive
// keeps the file's bytes whatever its resume states.
func oldLayout(t *testing.T, rec *formatstest.Recording) {
	t.Helper()
	dropped := 0
	for i := range rec.ChunkIndex {
		var st State
		if err := decodeResume(&st, rec.ChunkIndex[i].Resume); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		for k := range st.Clients {
			if st.Clients[k].Intro != nil {
				st.Clients[k].Intro = nil
				dropped++
			}
		}
		rec.ChunkIndex[i].Resume = appendResume(nil, &st)
		if v := rec.ChunkIndex[i].Resume[0]; v != resumeVersion {
			t.Fatalf("chunk %d: resume version %d after the rewrite", i, v)
		}
	}
	t.Logf("old layout: %d start-info messages and logins left out of %d chunks' states", dropped, len(rec.ChunkIndex))
}
