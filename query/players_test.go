package query

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
)

// TestPlayerStatsMatchRecords: a player's summary from the index's terms
// (PlayerStats) is what reading every recording of the player says (the
// names and ids seen with it, in how many recordings and when first and
// last, the aliases of a name's ids, the flags), by name and by id, over
// several segments with replaced and deleted recordings, names in
// several spellings, players without ids, recordings without a start.
func TestPlayerStatsMatchRecords(t *testing.T) {
	ix, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	names := []string{"Kitty", "kitty", "KITTY", "Bob", "bob", "Zed", "Ann"}
	ids := []string{"", "acc-1", "ACC-1", "acc-2", "steam:7", ""}
	flags := []string{"Griefing", "aimbot", "review"}
	doc := func(i int) RecordingDoc {
		r := RecordingDoc{ID: fmt.Sprintf("0000%04d-0000-4000-8000-000000000000", i), Format: "f",
			Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i*7919%5000) * time.Hour), Duration: time.Minute}
		if i%13 == 0 {
			r.Start = time.Time{}
		}
		for k := range 1 + i%4 {
			r.Players = append(r.Players, formats.Player{Name: names[(i+k*3)%len(names)], ID: ids[(i*5+k)%len(ids)]})
		}
		for k := range i % 3 {
			r.Flags = append(r.Flags, flags[(i+k)%len(flags)])
		}
		return r
	}
	live := map[string]RecordingDoc{}
	seq := uint64(0)
	for lo := 0; lo < 400; lo += 100 {
		var puts []RecordingDoc
		for i := lo; i < lo+100; i++ {
			puts = append(puts, doc(i))
		}
		var dels []string
		if lo > 0 {
			dels = []string{doc(lo - 3).ID, doc(lo - 8).ID}
			r := doc(lo - 20)
			r.Players = append(r.Players, formats.Player{Name: "Kitty", ID: "acc-9"}) // put again, changed
			puts = append(puts, r)
		}
		seq++
		if err := ix.Apply(ctx, seq, puts, dels); err != nil {
			t.Fatal(err)
		}
		for _, r := range puts {
			live[r.ID] = r
		}
		for _, id := range dels {
			delete(live, id)
		}
	}
	// The summary as reading the records makes it (the root package's
	// summarize, before the terms).
	want := func(name, id string) *PlayerStats {
		st := &PlayerStats{}
		type acc struct {
			recs        map[string]bool
			first, last time.Time
		}
		add := func(m map[string]*acc, v string, r RecordingDoc) {
			if v == "" {
				return
			}
			a := m[v]
			if a == nil {
				a = &acc{recs: map[string]bool{}}
				m[v] = a
			}
			a.recs[r.ID] = true
			if !r.Start.IsZero() {
				if a.first.IsZero() || r.Start.Before(a.first) {
					a.first = r.Start
				}
				if r.Start.After(a.last) {
					a.last = r.Start
				}
			}
		}
		list := func(m map[string]*acc) []Seen {
			out := []Seen{}
			for v, a := range m {
				out = append(out, Seen{v, len(a.recs), a.first, a.last})
			}
			slices.SortFunc(out, func(a, b Seen) int {
				if a.Recordings != b.Recordings {
					return b.Recordings - a.Recordings
				}
				return strings.Compare(a.Value, b.Value)
			})
			return out
		}
		ns, is, all := map[string]*acc{}, map[string]*acc{}, map[string]*acc{}
		fl := map[string]int{}
		lname, lid := strings.ToLower(name), strings.ToLower(id)
		for _, r := range live {
			found := false
			for _, p := range r.Players {
				// As the index matches: both lower-cased (not EqualFold).
				if name != "" && strings.ToLower(p.Name) == lname || name == "" && strings.ToLower(p.ID) == lid {
					found = true
					add(ns, p.Name, r)
					add(is, p.ID, r)
				}
			}
			if !found {
				continue
			}
			add(all, "all", r)
			for _, f := range slices.Compact(slices.Sorted(slices.Values(r.Flags))) {
				fl[f]++
			}
		}
		if a := all["all"]; a != nil {
			st.Total, st.First, st.Last = len(a.recs), a.first, a.last
		}
		st.Names, st.IDs = list(ns), list(is)
		for f, n := range fl {
			st.Flags = append(st.Flags, FlagCount{f, n})
		}
		slices.SortFunc(st.Flags, func(a, b FlagCount) int {
			if a.Recordings != b.Recordings {
				return b.Recordings - a.Recordings
			}
			return strings.Compare(a.Flag, b.Flag)
		})
		if name != "" {
			want := map[string]bool{}
			for _, s := range st.IDs[:min(len(st.IDs), aliasIDs)] {
				want[strings.ToLower(s.Value)] = true
			}
			al := map[string]*acc{}
			for _, r := range live {
				for _, p := range r.Players {
					if want[strings.ToLower(p.ID)] && !strings.EqualFold(p.Name, name) {
						add(al, p.Name, r)
					}
				}
			}
			st.Aliases = list(al)
		}
		return st
	}
	adv, _ := ix.bi.Advanced()
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	ix.keys.view(r, fSort)
	ix.keys.readers.Wait()
	r.Close()
	for _, k := range [][2]string{{"kitty", ""}, {"KiTTy", ""}, {"bob", ""}, {"Ann", ""}, {"nobody", ""},
		{"", "acc-1"}, {"", "Acc-1"}, {"", "steam:7"}, {"", "acc-9"}, {"", "none"}} {
		got, ok, err := ix.PlayerStats(ctx, k[0], k[1])
		if err != nil || !ok {
			t.Fatalf("%q: ok %v, %v", k, ok, err)
		}
		w := want(k[0], k[1])
		norm := func(st *PlayerStats) {
			for _, l := range []*[]Seen{&st.Names, &st.IDs, &st.Aliases} {
				if len(*l) == 0 {
					*l = nil
				}
			}
			if len(st.Flags) == 0 {
				st.Flags = nil
			}
		}
		norm(got)
		norm(w)
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%q:\n got %+v\nwant %+v", k, got, w)
		}
		if k[0] == "kitty" && (w.Total < 50 || len(w.Names) < 3 || len(w.IDs) < 3 || len(w.Aliases) < 2 || len(w.Flags) < 3) {
			t.Errorf("kitty: the test data says too little: %+v", w)
		}
	}
}
