package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay/query"
)

// SearchSorted runs a parsed query as SearchQuery does, in the order so
// names (the recording list sorted by start, duration or players count).
func (x *Archive) SearchSorted(ctx context.Context, pq *query.Query, so query.Sort, from, limit int) (*query.Results, error) {
	ix, err := x.index(ctx)
	if err != nil {
		return nil, err
	}
	res, err := ix.SearchQuery(ctx, pq, from, limit, so)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	x.flagMoments(pq, res)
	return res, nil
}

// PlayerScanMax bounds the recordings a player's summary reads when it
// reads their records (the index's terms sum up all of them, see
// query.Index.PlayerStats, once its sort numbers are read): past it the
// summary (aliases, first and last seen, flags) is of the first
// PlayerScanMax found, and Player says so (Scanned < Total).
const PlayerScanMax = 20_000

// PlayerKey names a player: by name (case-insensitive, as player: matches)
// or by the stable id the format gives players (player-id:), one of them.
type PlayerKey struct {
	Name, ID string
}

// Query is the search for the recordings of the player k names.
func (k PlayerKey) Query() (*query.Query, error) {
	op, v := "player", k.Name
	if k.ID != "" {
		op, v = "player-id", k.ID
	}
	if v == "" || (k.Name != "" && k.ID != "") {
		return nil, fmt.Errorf("player: give a name or an id")
	}
	return &query.Query{Terms: []query.Term{{Op: op, Value: strings.ToLower(v), Raw: op + ":" + v}}}, nil
}

// Seen is a name or an id seen with a player, how often and when.
type Seen struct {
	Value       string
	Recordings  int
	First, Last time.Time // zero when no recording of it has a start
}

// FlagCount is a flag and the number of a player's recordings carrying it.
type FlagCount = query.FlagCount

// PlayerSummary is what all recordings of one player say about it, for
// the player page.
type PlayerSummary struct {
	Key PlayerKey
	// Total counts the player's recordings; Scanned those the summary
	// read (at most PlayerScanMax).
	Total, Scanned int
	// First and Last are the earliest and latest start of its recordings
	// (zero when none has one).
	First, Last time.Time
	// Names are the names the player was seen under (by id: its aliases;
	// by name: the spellings of the name, which matches case-insensitively),
	// most recordings first.
	Names []Seen
	// IDs are the ids seen with the player (by name: the ids that name
	// was used with; by id: the id's spellings), most recordings first.
	// Moderators' data: accounts among them.
	IDs []Seen
	// Aliases, for a player asked by name, are the other names used by
	// the ids in IDs (the first 16 of them), most recordings first.
	Aliases []Seen
	// Flags are the flags of its recordings, most recordings first.
	Flags []FlagCount
}

// aliasIDs bounds how many of a name's ids its aliases are looked up for.
const aliasIDs = 16

// Player sums up every recording of the player k names (at most
// PlayerScanMax of them): the names and ids seen, first and last seen, the
// flags. A name found by no recording gives a summary with Total 0.
func (x *Archive) Player(ctx context.Context, k PlayerKey) (*PlayerSummary, error) {
	pq, err := k.Query()
	if err != nil {
		return nil, err
	}
	ix, err := x.index(ctx)
	if err != nil {
		return nil, err
	}
	seq, err := ix.Seq()
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	if sum := x.players.get(k, seq); sum != nil {
		c := *sum // the key as asked, the rest shared and never changed
		c.Key = k
		return &c, nil
	}
	out, err := x.summarize(ctx, ix, k, pq)
	if err != nil {
		return nil, err
	}
	x.players.put(k, seq, out)
	return out, nil
}

// playerCacheSize bounds the summaries playerCache keeps.
const playerCacheSize = 256

// playerCache keeps the summaries of the players asked for last, each with
// the index's change-log sequence number it was made at: a summary reads
// every recording of its player (a player of 5,000 recordings: about 25
// ms), and a moderator pages through a player's recordings, each page
// with the summary, while nothing changes. Any change to the index moves
// its sequence number and so retires every summary.
type playerCache struct {
	mu sync.Mutex
	m  map[PlayerKey]cachedSummary
}

type cachedSummary struct {
	seq uint64
	sum *PlayerSummary
}

// get returns the summary of k made at seq, or nil. Callers must not
// change it: it is shared.
func (c *playerCache) get(k PlayerKey, seq uint64) *PlayerSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[playerCacheKey(k)]; ok && e.seq == seq {
		return e.sum
	}
	return nil
}

// put keeps sum as the summary of k at seq, dropping the entries of older
// sequence numbers (or, when none is older, any one) when full.
func (c *playerCache) put(k PlayerKey, seq uint64, sum *PlayerSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[PlayerKey]cachedSummary{}
	}
	if len(c.m) >= playerCacheSize {
		for key, e := range c.m {
			if e.seq != seq {
				delete(c.m, key)
			}
		}
		for key := range c.m {
			if len(c.m) < playerCacheSize {
				break
			}
			delete(c.m, key)
		}
	}
	c.m[playerCacheKey(k)] = cachedSummary{seq, sum}
}

// playerCacheKey is k as the index matches it: case does not matter.
func playerCacheKey(k PlayerKey) PlayerKey {
	return PlayerKey{Name: strings.ToLower(k.Name), ID: strings.ToLower(k.ID)}
}

// summarize reads every recording of k (at most PlayerScanMax) into its
// summary.
func (x *Archive) summarize(ctx context.Context, ix *query.Index, k PlayerKey, pq *query.Query) (*PlayerSummary, error) {
	out := &PlayerSummary{Key: k}
	// From the index's terms when it can (no record read: a player of
	// 5,800 recordings took 25 ms of CPU below); else from the records.
	st, ok, err := ix.PlayerStats(ctx, k.Name, k.ID)
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	if ok {
		seen := func(l []query.Seen) []Seen {
			out := make([]Seen, len(l))
			for i, s := range l {
				out[i] = Seen(s)
			}
			return out
		}
		out.Total, out.Scanned, out.First, out.Last = st.Total, st.Total, st.First, st.Last
		out.Names, out.IDs, out.Aliases = seen(st.Names), seen(st.IDs), seen(st.Aliases)
		out.Flags = append(out.Flags, st.Flags...)
		if len(out.Aliases) == 0 {
			out.Aliases = nil
		}
		return out, nil
	}
	names, ids, flags := seenSet{}, seenSet{}, map[string]int{}
	out.Total, err = ix.EachHit(ctx, pq, PlayerScanMax, func(h *query.Hit) error {
		out.Scanned++
		if !h.Start.IsZero() {
			if out.First.IsZero() || h.Start.Before(out.First) {
				out.First = h.Start
			}
			if h.Start.After(out.Last) {
				out.Last = h.Start
			}
		}
		for i, n := range h.Players {
			id := ""
			if i < len(h.PlayerIDs) {
				id = h.PlayerIDs[i]
			}
			if k.Name != "" && strings.EqualFold(n, k.Name) || k.ID != "" && strings.EqualFold(id, k.ID) {
				names.add(n, h.ID, h.Start)
				ids.add(id, h.ID, h.Start)
			}
		}
		for _, f := range slices.Compact(slices.Sorted(slices.Values(h.Flags))) {
			flags[f]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	out.Names, out.IDs = names.list(), ids.list()
	out.Flags = query.FlagCounts(flags)
	if k.Name != "" && len(out.IDs) > 0 {
		if out.Aliases, err = x.aliases(ctx, ix, k.Name, out.IDs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// aliases returns the names other than name that the first aliasIDs of
// ids were seen under.
func (x *Archive) aliases(ctx context.Context, ix *query.Index, name string, ids []Seen) ([]Seen, error) {
	q := &query.Query{}
	want := map[string]bool{}
	for _, id := range ids[:min(len(ids), aliasIDs)] {
		v := strings.ToLower(id.Value)
		want[v] = true
		q.Terms = append(q.Terms, query.Term{Op: "player-id", Value: v, Raw: "player-id:" + id.Value})
	}
	if len(q.Terms) > 1 {
		or := &query.Node{Kind: query.OrNode}
		for i := range q.Terms {
			or.Nodes = append(or.Nodes, &query.Node{Kind: query.TermNode, Term: i})
		}
		q.Root = or
	}
	names := seenSet{}
	_, err := ix.EachHit(ctx, q, PlayerScanMax, func(h *query.Hit) error {
		for i, n := range h.Players {
			if i < len(h.PlayerIDs) && want[strings.ToLower(h.PlayerIDs[i])] && !strings.EqualFold(n, name) {
				names.add(n, h.ID, h.Start)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("player: aliases: %w", err)
	}
	return names.list(), nil
}

// seenSet gathers Seen values, each recording counted once per value.
type seenSet map[string]*seenEntry

type seenEntry struct {
	Seen
	last string // the recording counted last
}

func (s seenSet) add(v, rec string, start time.Time) {
	if v == "" {
		return
	}
	e := s[v]
	if e == nil {
		e = &seenEntry{Seen: Seen{Value: v}}
		s[v] = e
	}
	if e.last != rec {
		e.last = rec
		e.Recordings++
	}
	if !start.IsZero() {
		if e.First.IsZero() || start.Before(e.First) {
			e.First = start
		}
		if start.After(e.Last) {
			e.Last = start
		}
	}
}

// list returns the values, most recordings first, then by value.
func (s seenSet) list() []Seen {
	out := make([]Seen, 0, len(s))
	for _, e := range s {
		out = append(out, e.Seen)
	}
	slices.SortFunc(out, func(a, b Seen) int {
		if a.Recordings != b.Recordings {
			return b.Recordings - a.Recordings
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out
}
