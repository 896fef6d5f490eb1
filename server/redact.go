// This file keeps moderators' data from viewers at the wire: who flagged,
// held or took down what and why (flag notes, hold reasons, the audit's
// names and reasons), and the accounts players signed in with (player ids,
// the account a login event names). Viewers get the rest of each answer,
// and may not search by player-id:. Secrets in the files themselves
// (timeout codes, passwords) are the codecs' to redact and never reach the
// catalog or the index.

package server

import (
	"net/http"
	"slices"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/query"
	"github.com/replayarchive/replay/wire"
)

// seesModeration reports whether the caller may see moderators' data.
func seesModeration(r *http.Request) bool { return actorOf(r).Role >= replay.RoleModerator }

// moderatorOps are the query operators that search moderators' data:
// player ids are account names (teehistorian's rcon logins).
var moderatorOps = []string{"player-id"}

// viewerQuery refuses a viewer's query a term that searches moderators'
// data, pointing at it.
func viewerQuery(q *query.Query) error {
	for _, t := range q.Terms {
		if slices.Contains(moderatorOps, t.Op) {
			return &query.ParseError{Pos: t.Pos, Term: t.Raw, Msg: t.Op + ": searches accounts, which only moderators may search"}
		}
	}
	return nil
}

// recordingForViewer returns the recording without flag notes, the hold's
// reason, player ids and the audit's names and reasons.
func recordingForViewer(rj wire.Recording) wire.Recording {
	rj.Flags = slices.Clone(rj.Flags)
	for i := range rj.Flags {
		rj.Flags[i].Note = ""
	}
	if rj.Hold != nil {
		rj.Hold = &archive.Hold{At: rj.Hold.At}
	}
	rj.Players = slices.Clone(rj.Players)
	for i := range rj.Players {
		rj.Players[i].ID = ""
	}
	rj.Audit = viewerAudit(rj.Audit)
	return rj
}

// viewerAudit returns audit entries without who made them and why.
func viewerAudit(es []archive.AuditEntry) []archive.AuditEntry {
	out := slices.Clone(es)
	for i := range out {
		out[i].Who, out[i].Reason = "", ""
	}
	return out
}

// viewerEvents returns events without player ids and the accounts logins
// name.
func viewerEvents(evs []formats.Event) []formats.Event {
	out := make([]formats.Event, len(evs))
	for i, ev := range evs {
		out[i] = ev.WithoutAccount()
		out[i].PlayerID = ""
	}
	return out
}
