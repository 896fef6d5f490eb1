// Event blocks: a recording's events are indexed in runs of consecutive
// events, one bleve document per run, instead of one document per event.
//
// Every bleve document costs its id twice (stored and in the _id
// dictionary), a stored-fields record and an 8-byte offset, whatever it
// holds; one document per event made the index 21–28% of the archive's
// stored bytes. A block document carries what a search needs to
// find the block (its kinds and each distinct command, chat and other text,
// analysed without positions: a block matches a word or a prefix when one of
// its events does, a phrase when all its words are in the block) and one
// stored value with its events. Which events of a matching block match is
// then decided here, in Go, by the rules bleve applies to the terms on
// single events (eventMatcher).

package query

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/replayarchive/replay/formats"
)

// Bounds of one event block: at most blockEvents events and, past the
// first event, at most blockBytes of encoded events. Larger blocks make the
// index smaller and showing a hit's events dearer (a matching block is
// decoded whole).
const (
	blockEvents = 64
	blockBytes  = 8 << 10
)

// blockVersion is the first byte of a block's stored data.
const blockVersion = 3

// block accumulates the events of one block document while a recording is
// indexed.
type block struct {
	rec      string
	first, n int // number of the block's first event, events in it
	data     []byte
	strs     map[string]int // the block's string table (see appendStr)
	lastTick int64
	lastTime int64
	kinds    []string
	texts    [3][]byte // distinct cmd, chat, other text, valueSep-separated
	seen     map[string]bool
	seenKind map[string]bool
}

// full reports whether the block must be written before another event of
// at most max events.
func (b *block) full(max int) bool {
	return b.n >= max || (b.n > 0 && len(b.data) >= blockBytes)
}

// maxBlockEvents is blockEvents, or what a test set instead.
func (ix *Index) maxBlockEvents() int {
	if ix.blockEvents > 0 {
		return ix.blockEvents
	}
	return blockEvents
}

// reset empties b for the block starting at event first.
func (b *block) reset(rec string, first int) {
	b.rec, b.first, b.n = rec, first, 0
	b.data = b.data[:0]
	clear(b.strs)
	b.lastTick, b.lastTime = 0, 0
	b.kinds = b.kinds[:0]
	for i := range b.texts {
		b.texts[i] = b.texts[i][:0]
	}
	clear(b.seen)
	clear(b.seenKind)
}

// textClass returns the class of an event's text by its lower-cased kind:
// 0 command, 1 chat, 2 any other.
func textClass(kind string) int {
	switch kind {
	case formats.EventCommand:
		return classCmd
	case formats.EventChat:
		return classChat
	}
	return classOther
}

// The text classes of events (textClass).
const (
	classCmd   = iota // commands
	classChat         // chat lines
	classOther        // the text of any other event
)

// classFields are the block (and event) fields of the three text classes;
// recClassFields the recording document's.
var (
	classFields    = [3]string{fCmd, fChat, fText}
	recClassFields = [3]string{fRCmd, fRChat, fREtc}
	// partClassFields are a live recording's part documents' (live.go).
	partClassFields = [3]string{fPCmd, fPChat, fPEtc}
)

// add appends event e to the block.
func (b *block) add(e *formats.Event) {
	if b.strs == nil {
		b.strs, b.seen, b.seenKind = map[string]int{}, map[string]bool{}, map[string]bool{}
	}
	kind := strings.ToLower(e.Kind)
	if kind != "" && !b.seenKind[kind] {
		b.seenKind[kind] = true
		b.kinds = append(b.kinds, kind)
	}
	if e.Text != "" {
		c := textClass(kind)
		key := string(rune('0'+c)) + e.Text
		if !b.seen[key] {
			b.seen[key] = true
			b.texts[c] = appendValue(b.texts[c], e.Text)
		}
	}
	if b.n == 0 {
		b.data = append(b.data, blockVersion)
	}
	b.data = binary.AppendVarint(b.data, e.Tick-b.lastTick)
	b.data = appendTimeDelta(b.data, int64(e.Time)-b.lastTime)
	b.lastTick, b.lastTime = e.Tick, int64(e.Time)
	b.data = b.appendStr(b.data, e.Kind)
	b.data = b.appendStr(b.data, e.Player)
	b.data = b.appendStr(b.data, e.Text)
	b.n++
}

// appendTimeDelta appends a difference of two event times: whole
// milliseconds (most times are ticks of 20 ms) as a varint of twice the
// milliseconds (a delta of 0.7 s is 2 bytes instead of 5), anything else as
// a varint 1 and then the nanoseconds.
func appendTimeDelta(dst []byte, ns int64) []byte {
	if ns%int64(time.Millisecond) == 0 {
		return binary.AppendVarint(dst, ns/int64(time.Millisecond)*2)
	}
	return binary.AppendVarint(binary.AppendVarint(dst, 1), ns)
}

// appendStr appends s as an index into the block's string table: an index
// equal to the table's length adds s (its length and bytes follow), so a
// player name or command repeated in the block is stored once.
func (b *block) appendStr(dst []byte, s string) []byte {
	if i, ok := b.strs[s]; ok {
		return binary.AppendUvarint(dst, uint64(i))
	}
	i := len(b.strs)
	b.strs[s] = i
	dst = binary.AppendUvarint(dst, uint64(i))
	return appendStr(dst, s)
}

// blockDocID returns the id of the block of events first..first+n-1 of
// rec. The hex numbers are zero-padded so that ids sort in event order, and
// the last number lets DocCount count events from ids alone.
func blockDocID(rec string, first, n int) string {
	return fmt.Sprintf("%s/e%06x-%06x", rec, first, first+n-1)
}

// blockSpan returns the first and last event numbers of a block document
// id; ok is false for any other id.
func blockSpan(id string) (first, last int, ok bool) {
	_, span, ok := strings.Cut(id, "/e")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(span, "-")
	if !ok {
		return 0, 0, false
	}
	f, err1 := strconv.ParseUint(a, 16, 32)
	l, err2 := strconv.ParseUint(b, 16, 32)
	if err1 != nil || err2 != nil || l < f {
		return 0, 0, false
	}
	return int(f), int(l), true
}

// blockDoc builds the block's document.
func (ix *Index) blockDoc(b *block) *document.Document {
	d := document.NewDocument(blockDocID(b.rec, b.first, b.n))
	d.AddField(document.NewTextFieldCustom(fRec, nil, []byte(b.rec), keywordOpts, nil))
	for _, k := range b.kinds {
		d.AddField(document.NewTextFieldCustom(fKind, nil, []byte(k), keywordOpts, nil))
	}
	for c, v := range b.texts {
		if len(v) > 0 {
			d.AddField(document.NewTextFieldCustom(classFields[c], nil, append([]byte(nil), v...), keywordOpts, ix.gap))
		}
	}
	d.AddField(document.NewTextFieldCustom(fData, nil, append([]byte(nil), b.data...), storeOpts, nil))
	return d
}

// decodeBlock calls fn with each event of a block's stored data, in order.
// The event's strings share data's memory.
func decodeBlock(data string, fn func(e *EventHit)) error {
	d := strDecoder{s: data}
	if len(d.s) == 0 || d.s[0] != blockVersion {
		return errData
	}
	d.s = d.s[1:]
	var table [64]string
	strs := table[:0]
	str := func() string {
		i := d.uvarint()
		switch {
		case d.err != nil:
			return ""
		case i < uint64(len(strs)):
			return strs[i]
		case i == uint64(len(strs)):
			s := d.str()
			strs = append(strs, s)
			return s
		}
		d.err = errData
		return ""
	}
	var e EventHit
	for len(d.s) > 0 && d.err == nil {
		e.Tick += d.varint()
		e.Time += time.Duration(d.timeDelta())
		e.Kind = str()
		e.Player = str()
		e.Text = str()
		if d.err == nil {
			fn(&e)
		}
	}
	return d.err
}

// strDecoder is decoder over a string, whose strings it returns without
// copying; the first error sticks.
type strDecoder struct {
	s   string
	err error
}

func (d *strDecoder) uvarint() uint64 {
	var v uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		b := d.s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			d.s = d.s[i+1:]
			return v | uint64(b)<<(7*i)
		}
		v |= uint64(b&0x7f) << (7 * i)
	}
	if d.err == nil {
		d.err = errData
	}
	return 0
}

func (d *strDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// timeDelta reads appendTimeDelta's form.
func (d *strDecoder) timeDelta() int64 {
	switch v := d.varint(); v {
	case 1:
		return d.varint()
	default:
		if v&1 != 0 {
			d.err = errData
			return 0
		}
		return v / 2 * int64(time.Millisecond)
	}
}

func (d *strDecoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)) {
		d.err = errData
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

// eventMatcher decides which events of a matching block match a query's
// event-level terms (an event matches when any of them does), with the
// rules of the bleve queries the terms become: kind: a lower-cased kind
// equal to the value, or starting with it; cmd:, chat: and free words the
// analysed words of a command's, chat line's or (free words only) any
// event's text holding the word, a word with the prefix, or the phrase's
// words at consecutive positions.
type eventMatcher struct {
	ix    *Index
	terms []*Term
	ops   []operator // the operator of each term
	// memo holds the analysed answer for a text already seen, per class.
	memo  [3]map[string]bool
	lower []byte // mayMatch's buffer
}

func (ix *Index) newEventMatcher(terms []*Term) *eventMatcher {
	m := &eventMatcher{ix: ix, terms: terms, ops: make([]operator, len(terms))}
	for i, t := range terms {
		m.ops[i], _ = lookup(t.Op)
	}
	return m
}

// match reports whether e matches any of the matcher's terms.
func (m *eventMatcher) match(e *EventHit) bool {
	if m.ix.matchAll {
		return true
	}
	kind := strings.ToLower(e.Kind)
	c := textClass(kind)
	textOK, textDone := false, false
	for i, t := range m.terms {
		switch t.Op {
		case "kind":
			if kind != "" && (kind == t.Value || t.Prefix && strings.HasPrefix(kind, t.Value)) {
				return true
			}
			continue
		default:
			if !m.ops[i].searches(c) {
				continue
			}
		}
		if e.Text == "" {
			continue
		}
		if !textDone {
			textOK, textDone = m.textMatch(c, e.Text), true
		}
		if textOK {
			return true
		}
	}
	return false
}

// textMatch reports whether text matches any text term of the matcher
// (the caller checked that the class fits one of them).
func (m *eventMatcher) textMatch(c int, text string) bool {
	if !m.mayMatch(c, text) {
		return false
	}
	if v, ok := m.memo[c][text]; ok {
		return v
	}
	ok := m.analysedMatch(c, text)
	if m.memo[c] == nil {
		m.memo[c] = map[string]bool{}
	}
	m.memo[c][text] = ok
	return ok
}

// mayMatch is a quick test that text cannot match: an ASCII text whose
// lower-cased bytes do not hold every word of any term (as a substring)
// has no such word among its analysed words either. Other texts may match
// (lower-casing can change a rune's width or map it to ASCII).
func (m *eventMatcher) mayMatch(c int, text string) bool {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return true
		}
	}
	m.lower = m.lower[:0]
	for i := 0; i < len(text); i++ {
		b := text[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		m.lower = append(m.lower, b)
	}
	for i, t := range m.terms {
		if !m.textTerm(i, c) {
			continue
		}
		all := true
		for _, w := range t.Words {
			if !bytes.Contains(m.lower, []byte(w)) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// textTerm reports whether term i is a text term that can match text of
// class c.
func (m *eventMatcher) textTerm(i, c int) bool {
	return m.ops[i].searches(c) && len(m.terms[i].Words) > 0
}

// analysedMatch is textMatch on the analysed words of text.
func (m *eventMatcher) analysedMatch(c int, text string) bool {
	toks := m.ix.text.Analyze([]byte(text))
	ok := false
	for i, t := range m.terms {
		if ok {
			break
		}
		if !m.textTerm(i, c) {
			continue
		}
		for i := range toks {
			w := string(toks[i].Term)
			if t.Prefix {
				if strings.HasPrefix(w, t.Words[0]) {
					ok = true
					break
				}
				continue
			}
			if w != t.Words[0] || i+len(t.Words) > len(toks) {
				continue
			}
			all := true
			for k := 1; k < len(t.Words); k++ {
				if string(toks[i+k].Term) != t.Words[k] || toks[i+k].Position != toks[i].Position+k {
					all = false
					break
				}
			}
			if all {
				ok = true
				break
			}
		}
	}
	return ok
}

// blockTextQuery matches the blocks whose text field holds a word, a word
// with a prefix, or all words of a phrase: block text has no positions
// (they were most of a block's index bytes), so a phrase is checked by
// eventMatcher.
func blockTextQuery(field string, t *Term) query.Query {
	if t.Prefix || len(t.Words) < 2 {
		return textQuery(field, t)
	}
	qs := make([]query.Query, len(t.Words))
	for i, w := range t.Words {
		qs[i] = termQ(field, w)
	}
	return query.NewConjunctionQuery(qs)
}

// blockQuery matches the block documents of the given recordings.
func blockQuery(recs []string, evq query.Query) query.Query {
	return query.NewConjunctionQuery([]query.Query{recsQuery(recs), evq})
}

// hitEvents decodes the stored block data of a block document of h and
// adds its events that m matches to h (at most max of them, all counted).
func hitEvents(h *Hit, id, data string, m *eventMatcher, max int) error {
	err := decodeBlock(data, func(e *EventHit) {
		if !m.match(e) {
			return
		}
		h.EventTotal++
		if len(h.Events) < max {
			// Copy the strings out of the block's data: a hit keeps
			// a few events, not every block it came from.
			h.Events = append(h.Events, EventHit{Tick: e.Tick, Time: e.Time,
				Kind: strings.Clone(e.Kind), Player: strings.Clone(e.Player), Text: strings.Clone(e.Text)})
		}
	})
	if err != nil {
		return fmt.Errorf("query: events %s: %w", id, err)
	}
	return nil
}
