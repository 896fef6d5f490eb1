// This file holds the index: opening it, building documents and Apply.

// Package query indexes archived recordings and their searchable events in a
// bleve index and answers the moderator query language (see Parse) over it.
//
// The index is derived from the archive's catalog: the archive drives it with
// Apply, one batch per run of change-log entries, and Seq says which entry was
// applied last. The index can always be deleted and rebuilt.
//
// Each recording becomes one recording document (id "<rec>") and one event
// block document per run of up to 64 consecutive events (id
// "<rec>/e<first>-<last>", in hex, zero-padded; see block.go). All of them
// carry the recording id in the keyword field "rec", which is how Apply finds
// and removes a recording's documents. Mappings are lean: keyword fields for
// names, lower-cased; analysed text only for free text, command and chat text;
// no "_all" field; one compact stored field per document ("d") that holds what
// a search hit shows. The recording document also carries copies of all its
// events' text (command, chat, other), so that every query is one search over
// recording documents; events are then fetched for the page of hits only,
// from the blocks that match, and picked out of them by eventMatcher.
package query

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/replayarchive/replay/formats"
)

// RecordingDoc is what the index is told about one recording.
type RecordingDoc struct {
	ID          string // recording id (uuid text); must not contain '/'
	Format      string
	Session     string
	Start       time.Time
	Duration    time.Duration
	Ticks       int64
	Players     []formats.Player // Name, ID, Team
	Map, Server string
	Flags       []string // flag names, from the file or set by moderators
	Held        bool
	// FlagMoments counts the flags that are about a span of ticks (a
	// moderator's flag on a moment): a hit of flag: lists them, read from
	// the manifest, only when there are any.
	FlagMoments              int
	NativeBytes, StoredBytes int64
	// Attrs values are searchable as free words, except those whose key
	// looks secret (see secretKey): they are dropped.
	Attrs map[string]string
	// Events: console commands, chat, logins, votes, finishes, flags,
	// joins/drops, team changes. Their Text is indexed as given (codecs
	// redact secrets before they get here), but for the account a login
	// names (formats.Event.WithoutAccount).
	Events []formats.Event
}

// Field names in the bleve documents.
const (
	fRec     = "rec"     // recording id, on every document
	fIsRec   = "t"       // "r" on recording documents only
	fFormat  = "format"  // keyword
	fSession = "session" // keyword
	fPlayer  = "player"  // keyword: player names
	fPID     = "pid"     // keyword: player ids
	fMap     = "map"     // keyword
	fServer  = "server"  // keyword
	fFlag    = "flag"    // keyword
	fHeld    = "held"    // keyword "true"/"false"
	fKinds   = "kinds"   // keyword: event kinds present in the recording
	fSort    = "ts"      // keyword with doc values: start and id, for sorting
	fSortDur = "tsd"     // keyword with doc values: duration, then the ts key
	fSortPl  = "tsp"     // keyword with doc values: player count, then the ts key
	fWords   = "words"   // analysed: player names, map, server, attrs
	fRCmd    = "rcmd"    // analysed: all command text of the recording
	fRChat   = "rchat"   // analysed: all chat text of the recording
	fREtc    = "retc"    // analysed: text of the recording's other events
	pairs    = "2"       // suffix of the word-pair field of each of the four above
	fOver    = "over"    // keyword: rcmd, rchat, retc when they hold only part of the text (maxRecText)
	fSeen    = "pseen"   // keyword, as written: each player's name with its id and each id with its name, and each flag (players.go)

	// The score's keywords (operators.go, formats.ScoreSearchTerms).
	fRace   = "race"   // keyword: the players' races
	fResult = "result" // keyword: the players' results (win, loss, tie)
	fTeam   = "team"   // keyword: the players' teams
	fWinner = "winner" // keyword: the names of players whose result is win

	// Part documents of live recordings (live.go): fRec and the text of
	// the grows they cover, analysed as fRCmd, fRChat, fREtc (with pairs).
	fPCmd  = "pcmd"
	fPChat = "pchat"
	fPEtc  = "petc"
	// Event block documents.
	fKind = "kind" // keyword: the kinds of the block's events
	fCmd  = "cmd"  // analysed, no positions: the block's command texts
	fChat = "chat" // analysed, no positions: the block's chat texts
	fText = "text" // analysed, no positions: the block's other event texts
	// Both.
	fData = "d" // stored only: encoded hit data
)

// seqKey is the internal key under which Apply stores the last applied
// change-log sequence number.
var seqKey = []byte("replay.seq")

// longestKey is the internal key under which Apply keeps the longest
// duration of a recording with a start it has indexed (a big-endian int64
// of nanoseconds; deletes do not shorten it). A recording running at a
// moment T started after T minus it, which bounds at: and during: to a
// window of start times (see compiler.running). Open writes it into a new
// index; an index created before it was kept has none, and Apply adds
// none to it (it would not cover the recordings already in).
var longestKey = []byte("replay.longest")

// textAnalyzerName names textAnalyzer in the index mapping.
const textAnalyzerName = "replaytext"

// valueSep separates the values of a multi-valued analysed field; the gap
// analyzer leaves a position gap there so phrases never span two values.
const valueSep = '\x1e'

const (
	keywordOpts = index.IndexField | index.SkipFreqNorm
	textOpts    = index.IndexField | index.IncludeTermVectors // positions for phrases
	storeOpts   = index.StoreField
)

// Options tune an Index.
type Options struct {
	// MaxEvents caps the events listed under one hit (default 50). Hit.EventTotal
	// still counts them all.
	MaxEvents int
	// NoSync makes Apply return before its batch is on disk (bleve's
	// unsafe_batch). A crash can then lose the last batches, but never
	// tears one: Seq still names the last batch that is in the index.
	NoSync bool
	// ReadOnly opens an existing index for searching only, sharing it with
	// other read-only openers (a writer keeps it up to date).
	ReadOnly bool
	// Pace, if set, is called with the update's context before every
	// paceDocs documents it builds and each batch it writes, and the
	// function it returns after: a server lets the requests it answers go
	// first (archive.Archive.Background).
	Pace func(ctx context.Context) (done func())
}

// Index is a search index of recordings. It is safe for concurrent use.
// bleve locks the directory: one process at a time.
type Index struct {
	mu        sync.Mutex // serialises Apply
	bi        bleve.Index
	text      analysis.Analyzer
	gap       analysis.Analyzer
	pairs     analysis.Analyzer
	maxEvents int
	pace      func(context.Context) (done func()) // Options.Pace, or nil
	// keys are the sort keys' numbers per segment (sortkeys.go).
	keys sortKeys
	// batchDocs, when set, replaces maxBatchDocs (tests lower it to make
	// one recording span several batches).
	batchDocs int
	// blockEvents, when set, replaces the const of that name, and
	// matchAll makes every event of a matching block match (tests: with
	// blocks of one event, bleve alone decides which events match).
	blockEvents int
	matchAll    bool
}

// Merge planner floors: bleve's merge planner counts a segment smaller
// than the floor (in documents) as that large. With bleve's default,
// 2,000, an index of fewer documents than that is one tier whose budget
// is one segment, so every batch merged the whole index again: 256
// growing files in a new archive wrote 21 times their index bytes in
// merges, 40% of serve's CPU. A small index therefore opens with
// smallMergeFloor (merges wrote 10 times less, a grow cost 0.57× the
// CPU: BenchmarkFleet, docs/PERFORMANCE.md "The fleet"); a large one
// keeps bleve's floor, which leaves it fewer segments to search (an index
// of 20,000 recordings built at floor 100 had 22 segments against 13, and
// its searches' p50 was 1.2–2× as long).
const (
	smallMergeFloor = 100
	largeMergeFloor = 2000
	// smallIndexBytes is the most an index's segment files may hold for
	// it to open with smallMergeFloor.
	smallIndexBytes = 64 << 20
)

// mergeFloorFor returns the floor the index in dir opens with: by the
// bytes of its segment files (an index not made yet is small).
func mergeFloorFor(dir string) int {
	ents, err := os.ReadDir(filepath.Join(dir, "store"))
	if err != nil {
		return smallMergeFloor
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".zap") {
			n += fi.Size()
		}
	}
	if n > smallIndexBytes {
		return largeMergeFloor
	}
	return smallMergeFloor
}

// layoutVersion names the document layout this build writes; change it
// whenever fields or document ids change, so older indexes are rebuilt.
const layoutVersion = "2026-11-28.6"

// layoutKey is the internal key holding the index's layout version.
var layoutKey = []byte("replay.layout")

// ErrOldLayout is returned by Open for an index written with another
// document layout (an older build): rebuild it (see Rebuild).
var ErrOldLayout = errors.New("the search index was built with another layout and must be rebuilt")

// Open opens the index in dir, creating it (and dir) when missing.
func Open(dir string) (*Index, error) { return OpenWith(dir, Options{}) }

// OpenWith is Open with options.
func OpenWith(dir string, opt Options) (*Index, error) {
	ix := &Index{text: textAnalyzer(), maxEvents: opt.MaxEvents, pace: opt.Pace}
	ix.gap = gapAnalyzer{ix.text}
	ix.pairs = pairAnalyzer{ix.gap}
	if ix.maxEvents <= 0 {
		ix.maxEvents = 50
	}
	cfg := map[string]interface{}{"bolt_timeout": "2s"}
	if opt.NoSync {
		cfg["unsafe_batch"] = true
	}
	cfg["scorchMergePlanOptions"] = map[string]any{
		"FloorSegmentSize": mergeFloorFor(dir), "MaxSegmentsPerTier": 10, "MaxSegmentSize": 5000000,
		"TierGrowth": 10.0, "SegmentsPerMergeTask": 10, "ReclaimDeletesWeight": 2.0,
	}
	if opt.ReadOnly {
		cfg["read_only"] = true
		if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); err != nil {
			return nil, fmt.Errorf("query: no index in %s to open read-only: %w", dir, err)
		}
	}
	_, err := os.Stat(filepath.Join(dir, "index_meta.json"))
	switch {
	case err == nil:
		ix.bi, err = bleve.OpenUsing(dir, cfg)
		if err != nil {
			return nil, fmt.Errorf("query: open index %s: %w", dir, err)
		}
		if v, err := ix.bi.GetInternal(layoutKey); err != nil || string(v) != layoutVersion {
			ix.bi.Close()
			return nil, fmt.Errorf("query: index %s has layout %q, this build writes %q: %w", dir, v, layoutVersion, ErrOldLayout)
		}
	case errors.Is(err, os.ErrNotExist):
		// bleve refuses to create into an existing directory; accept an empty one.
		if ents, err := os.ReadDir(dir); err == nil {
			if len(ents) > 0 {
				return nil, fmt.Errorf("query: %s is not empty and holds no index", dir)
			}
			if err := os.Remove(dir); err != nil {
				return nil, fmt.Errorf("query: %w", err)
			}
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		m, err := indexMapping()
		if err != nil {
			return nil, fmt.Errorf("query: mapping: %w", err)
		}
		ix.bi, err = bleve.NewUsing(dir, m, scorch.Name, scorch.Name, cfg)
		if err != nil {
			return nil, fmt.Errorf("query: create index %s: %w", dir, err)
		}
		// One batch, one segment for the index to take in: the layout,
		// and the longest duration known from the start (an index created
		// by an earlier build has none, and at: stays unbounded there).
		b := ix.bi.NewBatch()
		b.SetInternal(layoutKey, []byte(layoutVersion))
		b.SetInternal(longestKey, make([]byte, 8))
		if err := ix.bi.Batch(b); err != nil {
			ix.bi.Close()
			return nil, fmt.Errorf("query: create index %s: %w", dir, err)
		}
	default:
		return nil, fmt.Errorf("query: %w", err)
	}
	return ix, nil
}

// indexMapping describes the documents for bleve's benefit (documents are
// built directly, see docs): nothing dynamic, nothing stored by default, no
// "_all" field.
func indexMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	// The analyzer text is indexed with, for bleve's match queries (this
	// package builds term and phrase queries itself).
	if err := m.AddCustomAnalyzer(textAnalyzerName, map[string]interface{}{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []string{lowercase.Name},
	}); err != nil {
		return nil, err
	}
	m.IndexDynamic = false
	m.StoreDynamic = false
	m.DocValuesDynamic = false
	dm := bleve.NewDocumentStaticMapping()
	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = false, false, false, false
		return f
	}
	for _, name := range []string{fRec, fIsRec, fFormat, fSession, fPlayer, fPID, fMap, fServer, fFlag, fHeld, fKinds, fKind, fSort, fSortDur, fSortPl, fWords + pairs, fRCmd + pairs, fRChat + pairs, fREtc + pairs, fPCmd + pairs, fPChat + pairs, fPEtc + pairs, fOver, fSeen} {
		dm.AddFieldMappingsAt(name, kw())
	}
	for _, name := range scoreFields {
		dm.AddFieldMappingsAt(name, kw())
	}
	for _, name := range []string{fWords, fRCmd, fRChat, fREtc, fPCmd, fPChat, fPEtc, fText, fCmd, fChat} {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = textAnalyzerName
		f.Store, f.IncludeInAll, f.DocValues = false, false, false
		// Event blocks' text has no positions (block.go).
		f.IncludeTermVectors = name != fText && name != fCmd && name != fChat
		dm.AddFieldMappingsAt(name, f)
	}
	d := bleve.NewTextFieldMapping()
	d.Index, d.Store, d.IncludeInAll, d.DocValues = false, true, false, false
	dm.AddFieldMappingsAt(fData, d)
	m.DefaultMapping = dm
	return m, nil
}

// Close closes the index once bleve's persister and merger have caught up
// with it (waiting at most closeMergeWait): bleve drops a merge caught by
// the close, and its output stays on disk until the index is opened again. After an
// ingest of 200 games that was one close in three to ten, with the index
// at 8.2–8.4 MB instead of 4.4–4.5 (docs/PERFORMANCE.md).
func (ix *Index) Close() error {
	ix.keys.close()
	ix.settle(closeMergeWait)
	if err := ix.bi.Close(); err != nil {
		return fmt.Errorf("query: close: %w", err)
	}
	return nil
}

// Seq returns the change-log sequence number stored by the last Apply (0 for
// a new index).
func (ix *Index) Seq() (uint64, error) {
	v, err := ix.bi.GetInternal(seqKey)
	if err != nil {
		return 0, fmt.Errorf("query: read seq: %w", err)
	}
	if len(v) == 0 {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("query: seq is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// DocCount returns the number of recordings plus the number of events
// indexed (live recordings' part documents are not counted). Events are kept in blocks (block.go), so it reads every
// document id: it is for tests and diagnostics, not for a hot path.
func (ix *Index) DocCount() (uint64, error) {
	n, err := ix.bi.DocCount()
	if err != nil || n == 0 {
		return n, err
	}
	var total uint64
	after := []string(nil)
	for {
		req := bleve.NewSearchRequestOptions(query.NewMatchAllQuery(), 10000, 0, false)
		req.SortBy([]string{"_id"})
		req.Score = bleve.ScoreNone
		req.SearchAfter = after
		res, err := ix.bi.Search(req)
		if err != nil {
			return 0, fmt.Errorf("query: count: %w", err)
		}
		for _, h := range res.Hits {
			if first, last, ok := blockSpan(h.ID); ok {
				total += uint64(last - first + 1)
			} else if !isPartID(h.ID) {
				total++
			}
		}
		if len(res.Hits) < 10000 {
			return total, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// Apply indexes puts and deletes: each put replaces all documents of its
// recording (the recording document and its event blocks), each delete
// removes all documents of that recording id, and seq is stored with the
// last bleve batch. Batches are bounded in documents and bytes (see
// batcher), so a recording with a hundred thousand events does not build
// one huge in-memory segment; after a crash between two of them Seq still
// // names the previous change-log entry, and the next Sync applies it again.
// An id both put and deleted ends up put; an id put twice ends up as its
// last put.
func (ix *Index) Apply(ctx context.Context, seq uint64, puts []RecordingDoc, deletes []string) error {
	ids := make([]string, 0, len(puts)+len(deletes))
	for i := range puts {
		if err := checkID(puts[i].ID); err != nil {
			return err
		}
		ids = append(ids, puts[i].ID)
	}
	for _, id := range deletes {
		if err := checkID(id); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	bt, err := ix.newBatcher(ctx)
	if err != nil {
		return err
	}
	if err := bt.deleteRecs(ids); err != nil {
		return err
	}
	last := make(map[string]int, len(puts)) // a recording put twice: the last one wins
	for i := range puts {
		last[puts[i].ID] = i
	}
	for i := range puts {
		if last[puts[i].ID] != i {
			continue
		}
		r := &puts[i]
		err := bt.put(r, func(fn func(n int, e *formats.Event) error) error {
			for n := range r.Events {
				if err := fn(n, &r.Events[n]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return bt.flush(seq)
}

// longest returns the longest duration Apply has indexed, and false for
// an index that does not keep it (see longestKey).
func (ix *Index) longest() (int64, bool, error) {
	v, err := ix.bi.GetInternal(longestKey)
	if err != nil {
		return 0, false, fmt.Errorf("query: read longest: %w", err)
	}
	if len(v) != 8 {
		return 0, false, nil
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

func checkID(id string) error {
	if id == "" || strings.ContainsRune(id, '/') {
		return fmt.Errorf("query: bad recording id %q", id)
	}
	return nil
}

// docIDsOf returns the ids of all documents of the given recordings.
func (ix *Index) docIDsOf(ctx context.Context, recs []string) ([]string, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	if n, err := ix.bi.DocCount(); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	} else if n == 0 {
		return nil, nil
	}
	q := recsQuery(recs)
	var out []string
	const page = 10000
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(q, page, 0, false)
		req.SortBy([]string{"_id"})
		req.Score = bleve.ScoreNone
		if after != nil {
			req.SearchAfter = after
		}
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("query: find documents to replace: %w", err)
		}
		for _, h := range res.Hits {
			out = append(out, h.ID)
		}
		if len(res.Hits) < page {
			return out, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// recsQuery matches every document of the given recordings.
func recsQuery(recs []string) query.Query {
	if len(recs) == 1 {
		return termQ(fRec, recs[0])
	}
	qs := make([]query.Query, len(recs))
	for i, r := range recs {
		qs[i] = termQ(fRec, r)
	}
	return query.NewDisjunctionQuery(qs)
}

func termQ(field, term string) *query.TermQuery {
	q := query.NewTermQuery(term)
	q.SetField(field)
	return q
}

// secretKey reports whether an attribute key looks like it names a secret
// (or a moderation timeout, which is not for search either); such values are
// never indexed.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "passwd", "secret", "token", "timeout", "rcon", "auth", "credential", "apikey", "api_key"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// eventText collects, while a recording's event blocks are built, what
// its recording document carries about them: the kinds present and the text
// of commands, chat and other events.
//
// Each distinct text is kept once per class: searches never score, so a
// repeated value adds nothing a query can see, and a long recording repeats
// its commands and chat lines thousands of times (the analysed
// text of one recording of 100,000 events was the largest thing in memory
// while it was indexed).
type eventText struct {
	kinds          []string
	seen           map[string]bool
	cmd, chat, etc []byte
	texts          [3]map[string]bool // seen values of cmd, chat, etc
	over           [3]bool            // a class reached maxRecText
	// base counts, per class, the text a live recording's earlier parts
	// hold (live.go): it counts towards maxRecText.
	base [3]int
}

// maxRecText bounds the distinct text of one class (commands, chat, other)
// that a recording document carries. Analysing the text of a recording
// document costs about 150 times its size: a 16-hour server file with
// 128,000 distinct commands (1 MB) took the index update to 390 MiB.
// Past the bound the document is marked (fOver) and a search
// confirms such a recording from its event blocks, which hold every event
// (search.go, overflowed).
const maxRecText = 64 << 10

// add appends text to the values of class i (0 cmd, 1 chat, 2 other)
// unless it is there already or the class is full.
func (t *eventText) add(i int, v *[]byte, text string) {
	if t.over[i] {
		return
	}
	if t.texts[i] == nil {
		t.texts[i] = map[string]bool{}
	}
	if !t.texts[i][text] && t.base[i]+len(*v)+len(text) > maxRecText {
		t.over[i], t.texts[i] = true, nil
		return
	}
	if !t.texts[i][text] {
		t.texts[i][text] = true
		*v = appendValue(*v, text)
	}
}

// note notes the kind and text of an event of the recording in t.
func (t *eventText) note(e *formats.Event) {
	kind := strings.ToLower(e.Kind)
	if kind != "" && !t.seen[kind] {
		if t.seen == nil {
			t.seen = map[string]bool{}
		}
		t.seen[kind] = true
		t.kinds = append(t.kinds, kind)
	}
	if e.Text != "" {
		switch textClass(kind) {
		case 0:
			t.add(0, &t.cmd, e.Text)
		case 1:
			t.add(1, &t.chat, e.Text)
		default:
			t.add(2, &t.etc, e.Text)
		}
	}
}

// recDoc builds the recording document of r; t holds what its events said
// (r.Events itself is not read: events are streamed through eventDoc).
func (ix *Index) recDoc(r *RecordingDoc, t *eventText) *document.Document {
	d := document.NewDocument(r.ID)
	kw := func(name, v string) {
		if v != "" {
			d.AddField(document.NewTextFieldCustom(name, nil, []byte(strings.ToLower(v)), keywordOpts, nil))
		}
	}
	d.AddField(document.NewTextFieldCustom(fRec, nil, []byte(r.ID), keywordOpts, nil))
	d.AddField(document.NewTextFieldCustom(fIsRec, nil, []byte("r"), keywordOpts, nil))
	kw(fFormat, r.Format)
	kw(fSession, r.Session)
	kw(fMap, r.Map)
	kw(fServer, r.Server)
	if r.Held {
		kw(fHeld, "true")
	} else {
		kw(fHeld, "false")
	}
	var free []byte // names, map, server, attrs
	addFree := func(s string) {
		if s == "" {
			return
		}
		if len(free) > 0 {
			free = append(free, valueSep)
		}
		free = append(free, s...)
	}
	seen := map[string]bool{}
	for _, p := range r.Players {
		if p.Name != "" && !seen["n"+p.Name] {
			seen["n"+p.Name] = true
			kw(fPlayer, p.Name)
			addFree(p.Name)
		}
		if p.ID != "" && !seen["i"+p.ID] {
			seen["i"+p.ID] = true
			kw(fPID, p.ID)
		}
	}
	for _, f := range r.Flags {
		if !seen["f"+f] {
			seen["f"+f] = true
			kw(fFlag, f)
		}
	}
	for _, t := range seenTerms(r) {
		d.AddField(document.NewTextFieldCustom(fSeen, nil, []byte(t), keywordOpts, nil))
	}
	addScoreFields(kw, r)
	addFree(r.Map)
	addFree(r.Server)
	for k, v := range r.Attrs {
		if !secretKey(k) {
			addFree(v)
		}
	}
	ix.addText(d, fWords, free)
	// The sort key: "1", start as 16 hex digits (offset so that pre-1970
	// starts stay in order), then the id; "0" and the id when the start is
	// unknown (or beyond what nanoseconds since 1970 hold). It is unique,
	// so the order is total, and its number (keyNumber) is the start, which
	// time terms are answered from (timerange.go).
	ts := "0" + r.ID
	if !r.Start.IsZero() && r.Start.Equal(time.Unix(0, r.Start.UnixNano())) {
		ts = fmt.Sprintf("1%016x%s", startNum(r.Start), r.ID)
	}
	d.AddField(document.NewTextFieldCustom(fSort, nil, []byte(ts), keywordOpts|index.DocValues, nil))
	// The other orders' keys (Sort): the value at a fixed width, then ts,
	// so ties go by start and id and the order stays total.
	d.AddField(document.NewTextFieldCustom(fSortDur, nil, []byte(durKey(r.Duration)+ts), keywordOpts|index.DocValues, nil))
	d.AddField(document.NewTextFieldCustom(fSortPl, nil, []byte(fmt.Sprintf("%08x", len(r.Players))+ts), keywordOpts|index.DocValues, nil))

	for _, k := range t.kinds {
		kw(fKinds, k)
	}
	for _, f := range []struct {
		name string
		v    []byte
	}{{fRCmd, t.cmd}, {fRChat, t.chat}, {fREtc, t.etc}} {
		ix.addText(d, f.name, f.v)
	}
	for i, f := range []string{fRCmd, fRChat, fREtc} {
		if t.over[i] {
			kw(fOver, f)
		}
	}
	d.AddField(document.NewTextFieldCustom(fData, nil, encodeRec(r), storeOpts, nil))
	return d
}

// durKey is a duration as 16 hex digits of milliseconds (a negative one
// as zero), so that keys sort as the durations do.
func durKey(d time.Duration) string {
	return fmt.Sprintf("%016x", uint64(max(d, 0)/time.Millisecond))
}

// addText adds a recording-level text field: the words with positions, and
// the pairs of consecutive words as keywords in field+pairs, which answer
// two-word phrases with one term and narrow longer ones cheaply.
func (ix *Index) addText(d *document.Document, field string, v []byte) {
	if len(v) == 0 {
		return
	}
	d.AddField(document.NewTextFieldCustom(field, nil, v, textOpts, ix.gap))
	d.AddField(document.NewTextFieldCustom(field+pairs, nil, v, keywordOpts, ix.pairs))
}

func appendValue(b []byte, s string) []byte {
	if len(b) > 0 {
		b = append(b, valueSep)
	}
	return append(b, s...)
}

// pairAnalyzer turns the words of a (gap-analysed) text into "w1 w2" terms
// for each two words at consecutive positions.
type pairAnalyzer struct{ a analysis.Analyzer }

func (p pairAnalyzer) Analyze(in []byte) analysis.TokenStream {
	toks := p.a.Analyze(in)
	out := make(analysis.TokenStream, 0, len(toks))
	for i := 1; i < len(toks); i++ {
		a, b := toks[i-1], toks[i]
		if b.Position != a.Position+1 {
			continue
		}
		term := make([]byte, 0, len(a.Term)+1+len(b.Term))
		term = append(append(append(term, a.Term...), ' '), b.Term...)
		out = append(out, &analysis.Token{Term: term, Start: a.Start, End: b.End, Position: len(out) + 1, Type: analysis.AlphaNumeric})
	}
	return out
}

// gapAnalyzer analyses valueSep-separated values with a, leaving a gap of one
// position between values so that no phrase matches across two of them.
type gapAnalyzer struct{ a analysis.Analyzer }

func (g gapAnalyzer) Analyze(in []byte) analysis.TokenStream {
	var out analysis.TokenStream
	pos, off := 0, 0
	for {
		k := bytes.IndexByte(in[off:], valueSep)
		part := in[off:]
		if k >= 0 {
			part = in[off : off+k]
		}
		toks := g.a.Analyze(part)
		for _, t := range toks {
			t.Position += pos
			t.Start += off
			t.End += off
		}
		if len(toks) > 0 {
			pos = toks[len(toks)-1].Position + 1
			out = append(out, toks...)
		}
		if k < 0 {
			return out
		}
		off += k + 1
	}
}

// closeMergeWait bounds how long Close waits for bleve's background work:
// after the 200 games' ingest (4 s) the wait is 38–65 ms.
const closeMergeWait = 2 * time.Second

// settle waits until bleve's persister and merger have caught up with the
// index's latest state, at most wait.
func (ix *Index) settle(wait time.Duration) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return
	}
	if stats := s.StatsMap(); !mergesUnderWay(stats) && stats["TotFileMergePlanTasks"] == uint64(0) {
		return // no merge this session (a search, a read-only open)
	}
	// Settled is bleve's own steady state: the latest root both persisted
	// and planned for by the merger (a merge's introduction makes a new
	// root, which the merger then plans for), and no planned merge left.
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		stats := s.StatsMap()
		if active, _ := stats["index_bgthreads_active"].(bool); !active && !mergesUnderWay(stats) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mergesUnderWay reports whether scorch's statistics count merge tasks
// planned and not yet done.
func mergesUnderWay(stats map[string]any) bool {
	n := func(k string) uint64 { v, _ := stats[k].(uint64); return v }
	return n("TotFileMergePlanTasks") > n("TotFileMergePlanTasksDone")+n("TotFileMergePlanTasksErr")
}

// reader returns a reader of the index's current segments, which the
// caller closes: the direct walks of postings and sort numbers read it.
func (ix *Index) reader() (index.IndexReader, error) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return nil, err
	}
	return adv.Reader()
}

// Compact merges the index's segments with bleve's single-segment plan
// (at 100k recordings it left 1 segment, at a million 3), which makes
// searches faster after a bulk build such as Rebuild: a million's index
// capped at 800,000 documents a segment kept 5, and its searches took
// 1.3-1.5x the CPU. It blocks until the merge is done and needs free disk
// space about the size of the index.
func (ix *Index) Compact(ctx context.Context) error {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return fmt.Errorf("query: compact: %w", err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return fmt.Errorf("query: compact: index is %T, not scorch", adv)
	}
	if err := s.ForceMerge(ctx, nil); err != nil {
		return fmt.Errorf("query: compact: %w", err)
	}
	return nil
}
