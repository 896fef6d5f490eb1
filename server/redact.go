// This file keeps moderators' data from viewers at the wire: who flagged,
// held or took down what and why (flag notes, hold reasons, the audit's
// names and reasons), and the accounts players signed in with (player ids,
// the account a login event names). A viewer sees each player id as a
// pseudonym (pseudonym), the same in every answer about one recording, so
// the page pairs joins with drops alike for every role and format. Viewers
// get the rest of each answer, and may not search by player-id:. Secrets in the files themselves
// (timeout codes, passwords) are the codecs' to redact and never reach the
// catalog or the index.

package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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
// reason and the audit's names and reasons, its player ids pseudonyms.
func (s *Server) recordingForViewer(rj wire.Recording) wire.Recording {
	rj.Flags = slices.Clone(rj.Flags)
	for i := range rj.Flags {
		rj.Flags[i].Note = ""
	}
	if rj.Hold != nil {
		rj.Hold = &archive.Hold{At: rj.Hold.At}
	}
	rj.Players = slices.Clone(rj.Players)
	for i := range rj.Players {
		rj.Players[i].ID = s.pseudonym(rj.ID, rj.Players[i].ID)
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

// viewerEvents returns recording id's events without the accounts logins
// name, their player ids pseudonyms.
func (s *Server) viewerEvents(id string, evs []formats.Event) []formats.Event {
	out := make([]formats.Event, len(evs))
	for i, ev := range evs {
		out[i] = ev.WithoutAccount()
		out[i].PlayerID = s.pseudonym(id, ev.PlayerID)
	}
	return out
}

// pseudonym stands for player id of recording rec in a viewer's answers:
// "p" and 10 hex digits of an HMAC under a key of this server's own, so it
// is the same in every answer while the server runs and says nothing of
// the id (an account name) it stands for, nor links a player across
// recordings. An empty id stays empty.
func (s *Server) pseudonym(rec, id string) string {
	if id == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.pseudonymKey[:])
	m.Write([]byte(rec))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return "p" + hex.EncodeToString(m.Sum(nil)[:5])
}
