package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestQueryBombsRefused: a query past the bounds on length, terms or prefix
// terms is refused at parse time, fast, pointing at where it went over.
func TestQueryBombsRefused(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	terms := func(n int, term string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, term+" ", i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name, q string
		pos     int
		term    string
	}{
		{"80 KB of *e*", strings.Repeat("*e* ", 20000), MaxQueryBytes, "*e*"},
		{"too many terms", terms(MaxTerms+1, "w%d"), len(terms(MaxTerms, "w%d")), fmt.Sprintf("w%d", MaxTerms)},
		{"too many prefixes", terms(MaxPrefixTerms+1, "p%d*"), len(terms(MaxPrefixTerms, "p%d*")), fmt.Sprintf("p%d*", MaxPrefixTerms)},
	} {
		start := time.Now()
		_, err := ix.Search(context.Background(), c.q, 20)
		took := time.Since(start)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v, want a ParseError", c.name, err)
			continue
		}
		if pe.Pos != c.pos || pe.Term != c.term {
			t.Errorf("%s: position %d term %q, want %d %q (%v)", c.name, pe.Pos, pe.Term, c.pos, c.term, err)
		}
		if took > 100*time.Millisecond {
			t.Errorf("%s: refused after %v, want under 100 ms", c.name, took)
		}
	}
	// At the bounds a query still runs.
	if _, err := ix.Search(context.Background(), terms(MaxPrefixTerms, "p%d*")+terms(MaxTerms-MaxPrefixTerms, "w%d"), 20); err != nil {
		t.Errorf("a query at the bounds: %v", err)
	}
}

// TestSearchOffsetCannotOverflow: an offset near the largest int is
// refused with ErrOffset, not a panic in the top-N heap.
func TestSearchOffsetCannotOverflow(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	q, _ := Parse("")
	for _, from := range []int{math.MaxInt, math.MaxInt - 19, MaxOffset + 1} {
		if _, err := ix.SearchQuery(context.Background(), q, from, 20); !errors.Is(err, ErrOffset) {
			t.Errorf("from %d: %v, want ErrOffset", from, err)
		}
	}
	res, err := ix.SearchQuery(context.Background(), q, MaxOffset, math.MaxInt)
	if err != nil || len(res.Hits) != 0 || res.Total != 4 {
		t.Errorf("from MaxOffset, limit MaxInt: %v %+v", err, res)
	}
}

// TestSearchStopsWhenCancelled: a search whose caller has gone (its
// context cancelled) stops with the context's error instead of finishing.
func TestSearchStopsWhenCancelled(t *testing.T) {
	ix, _ := openFixture(t)
	defer ix.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, q := range []string{"", "player:zed", "kick"} {
		if res, err := ix.Search(ctx, q, 20); !errors.Is(err, context.Canceled) {
			t.Errorf("%q with a cancelled context: %v, %v; want context.Canceled", q, res, err)
		}
	}
}
