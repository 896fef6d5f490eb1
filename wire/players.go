package wire

import (
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/query"
)

// Seen is a name or id seen with a player: in how many of its recordings,
// and the first and last start among them (RFC 3339, UTC).
type Seen struct {
	Value      string `json:"value"`
	Recordings int    `json:"recordings"`
	First      string `json:"first,omitempty"`
	Last       string `json:"last,omitempty"`
}

// FlagCount is a flag and how many of a player's recordings carry it.
type FlagCount struct {
	Flag       string `json:"flag"`
	Recordings int    `json:"recordings"`
}

// PlayerHit is one recording of a player: the search hit, and the names
// (as) and, for moderators, the ids the player had in it.
type PlayerHit struct {
	Hit
	As  []string `json:"as"`
	IDs []string `json:"ids,omitempty"`
}

// Player is the player page's answer (GET /api/v1/players/{key}): who was
// asked for and how (by name, id or pseudonym), what all its recordings
// say (first and last seen, names, ids, aliases, flags) and a page of
// them, newest first. A viewer's answer has no ids and no aliases (they
// link names through accounts): it says only what a search by the name
// says.
type Player struct {
	Name string `json:"name,omitempty"`
	ID   string `json:"id,omitempty"`
	By   string `json:"by"`
	// Total counts the player's recordings; Scanned those summed up
	// (at most replay.PlayerScanMax).
	Total      int         `json:"total"`
	Scanned    int         `json:"scanned"`
	FirstSeen  string      `json:"first_seen,omitempty"`
	LastSeen   string      `json:"last_seen,omitempty"`
	Names      []Seen      `json:"names"`
	IDs        []Seen      `json:"ids,omitempty"`
	Aliases    []Seen      `json:"aliases,omitempty"`
	Flags      []FlagCount `json:"flags"`
	Recordings []PlayerHit `json:"recordings"`
	NextCursor string      `json:"next_cursor,omitempty"`
	TookMS     float64     `json:"took_ms"`
}

// PlayerOf is the JSON form of player summary p and page res of its
// recordings; moderator says whether ids and aliases are shown, next is
// the cursor of the following page ("" for none).
func PlayerOf(x *replay.Archive, p *replay.PlayerSummary, res *query.Results, moderator bool, next string) Player {
	out := Player{Name: p.Key.Name, ID: p.Key.ID, By: "name", Total: p.Total, Scanned: p.Scanned,
		FirstSeen: stamp(p.First), LastSeen: stamp(p.Last), Names: seenOf(p.Names), Flags: []FlagCount{},
		Recordings: []PlayerHit{}, NextCursor: next}
	if p.Key.ID != "" {
		out.By = "id"
	}
	if moderator {
		out.IDs, out.Aliases = seenOf(p.IDs), seenOf(p.Aliases)
	} else {
		out.ID = ""
	}
	for _, f := range p.Flags {
		out.Flags = append(out.Flags, FlagCount{f.Flag, f.Recordings})
	}
	for _, h := range res.Hits {
		ph := PlayerHit{Hit: HitOf(h, x.CanClip(h.Format)), As: []string{}}
		for i, n := range h.Players {
			id := ""
			if i < len(h.PlayerIDs) {
				id = h.PlayerIDs[i]
			}
			if p.Key.ID != "" && strings.EqualFold(id, p.Key.ID) || p.Key.Name != "" && strings.EqualFold(n, p.Key.Name) {
				ph.As = appendNew(ph.As, n)
				if moderator && id != "" {
					ph.IDs = appendNew(ph.IDs, id)
				}
			}
		}
		out.Recordings = append(out.Recordings, ph)
	}
	return out
}

func seenOf(s []replay.Seen) []Seen {
	out := make([]Seen, len(s))
	for i, v := range s {
		out[i] = Seen{Value: v.Value, Recordings: v.Recordings, First: stamp(v.First), Last: stamp(v.Last)}
	}
	return out
}

// stamp is t in RFC 3339, UTC ("" for the zero time).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
