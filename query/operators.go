// The operators of the query language, in one table that the parser (how
// a value is read) and the search (the index query a term becomes) both
// read, so an operator cannot be known to one and missing from the other.

package query

import (
	"fmt"
	"slices"

	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/replayarchive/replay/formats"
)

// opKind says how an operator's value is read.
type opKind int

const (
	opKeyword  opKind = iota // case-insensitive exact value, '*' suffix for prefix
	opText                   // analysed words or a phrase
	opDate                   // RFC 3339 or YYYY-MM-DD
	opWindow                 // a time as a window (a whole minute, day...), or FROM..TO
	opDuration               // units.ParseDuration, as archivectl's flags
	opBool                   // true/false, yes/no, 1/0
)

// operator is one operator: how its value is read and what it matches.
type operator struct {
	kind opKind
	// rec matches the recording documents for which a term holds
	// (ignoring Neg).
	rec func(t *Term) query.Query
	// event, set for event-level and free terms, matches the event
	// blocks that may hold events a term brings (a phrase's words in any
	// order: eventMatcher decides which events match).
	event func(t *Term) query.Query
	// classes, for a text operator, are the text classes of the events
	// it searches (textClass: classCmd, classChat, classOther).
	classes []int
}

// searches reports whether o is a text operator that searches the text of
// events of class c.
func (o operator) searches(c int) bool { return o.kind == opText && slices.Contains(o.classes, c) }

// operators lists every operator by name.
var operators = map[string]operator{
	"player":    {kind: opKeyword, rec: keyword(fPlayer)},
	"player-id": {kind: opKeyword, rec: keyword(fPID)},
	"map":       {kind: opKeyword, rec: keyword(fMap)},
	"server":    {kind: opKeyword, rec: keyword(fServer)},
	"flag":      {kind: opKeyword, rec: keyword(fFlag)},
	"format":    {kind: opKeyword, rec: keyword(fFormat)},
	"session":   {kind: opKeyword, rec: keyword(fSession)},
	"kind":      {kind: opKeyword, rec: keyword(fKinds), event: keyword(fKind)},
	"id":        {kind: opKeyword, rec: recordingID},
	"cmd":       {kind: opText, rec: recText(fRCmd), event: blockText(fCmd), classes: []int{classCmd}},
	"chat":      {kind: opText, rec: recText(fRChat), event: blockText(fChat), classes: []int{classChat}},
	"after":     {kind: opDate, rec: startAfter},
	"before":    {kind: opDate, rec: startBefore},
	"at":        {kind: opWindow, rec: running},
	"during":    {kind: opWindow, rec: running},
	"longer":    {kind: opDuration, rec: longer},
	"shorter":   {kind: opDuration, rec: shorter},
	"held":      {kind: opBool, rec: held},
	"flagged":   {kind: opBool, rec: flagged},
	"race":      {kind: opKeyword, rec: keyword(fRace)},
	"result":    {kind: opKeyword, rec: result},
	"team":      {kind: opKeyword, rec: keyword(fTeam)},
	"winner":    {kind: opKeyword, rec: keyword(fWinner)},
}

// freeTerm is a word or phrase without an operator: it matches recordings
// by player name, map, server and attributes or by any event's text.
var freeTerm = operator{
	kind: opText,
	rec: func(t *Term) query.Query {
		return query.NewDisjunctionQuery([]query.Query{
			recTextQuery(fWords, t), recTextQuery(fRCmd, t), recTextQuery(fRChat, t), recTextQuery(fREtc, t),
		})
	},
	event: func(t *Term) query.Query {
		return query.NewDisjunctionQuery([]query.Query{blockTextQuery(fCmd, t), blockTextQuery(fChat, t), blockTextQuery(fText, t)})
	},
	classes: []int{classCmd, classChat, classOther},
}

// lookup returns the operator named op ("" is the free term).
func lookup(op string) (operator, bool) {
	if op == "" {
		return freeTerm, true
	}
	o, ok := operators[op]
	return o, ok
}

func keyword(field string) func(*Term) query.Query {
	return func(t *Term) query.Query { return kwQuery(field, t) }
}

func recText(field string) func(*Term) query.Query {
	return func(t *Term) query.Query { return recTextQuery(field, t) }
}

func blockText(field string) func(*Term) query.Query {
	return func(t *Term) query.Query { return blockTextQuery(field, t) }
}

// recordingID matches recording documents only: events carry the id too.
func recordingID(t *Term) query.Query {
	return query.NewConjunctionQuery([]query.Query{termQ(fIsRec, "r"), kwQuery(fRec, t)})
}

func held(t *Term) query.Query { return termQ(fHeld, fmt.Sprint(t.Bool)) }

// flagged matches any flag at all: every term of the flag field.
func flagged(*Term) query.Query {
	q := query.NewPrefixQuery("")
	q.SetField(fFlag)
	return q
}

func startAfter(t *Term) query.Query { return &startQuery{from: t.Time} }

func startBefore(t *Term) query.Query { return &startQuery{until: t.Time} }

// running matches recordings that were running at some moment of the
// term's window: start < Until and start + duration > Time, so a game
// that began before the window and was still going is found too.
func running(t *Term) query.Query { return &runningQuery{from: t.Time, until: t.Until} }

func longer(t *Term) query.Query { return longerThan(t.Dur) }

func shorter(t *Term) query.Query { return shorterThan(t.Dur) }

// scoreFields are the recording document's score keywords.
var scoreFields = []string{fRace, fResult, fTeam, fWinner}

// addScoreFields adds r's score keywords through kw: each player's race,
// result and team, and the names of the players who won
// (formats.ScoreSearchTerms reads them from the players and attrs).
func addScoreFields(kw func(field, v string), r *RecordingDoc) {
	st := formats.ScoreSearchTerms(r.Players, r.Attrs)
	for _, f := range []struct {
		field string
		vs    []string
	}{{fRace, st.Races}, {fResult, st.Results}, {fTeam, st.Teams}, {fWinner, st.Winners}} {
		for _, v := range f.vs {
			kw(f.field, v)
		}
	}
}

// result matches a result by its normal word (formats.NormalResult:
// victory is win, defeat is loss), a prefix as it is.
func result(t *Term) query.Query {
	if n := formats.NormalResult(t.Value); n != "" && !t.Prefix {
		return termQ(fResult, n)
	}
	return kwQuery(fResult, t)
}
