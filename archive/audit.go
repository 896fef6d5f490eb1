// The audit log: who changed what, when and why.

package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Audit actions.
const (
	AuditIngest       = "ingest"
	AuditFlag         = "flag"
	AuditUnflag       = "unflag"
	AuditHold         = "hold"
	AuditRelease      = "release"
	AuditTakedown     = "takedown"
	AuditLiftTakedown = "lift-takedown"
	AuditPrune        = "prune"
	AuditPolicy       = "policy"
	AuditTokenCreate  = "token-create"
	AuditTokenRevoke  = "token-revoke"
	// AuditRemote: the remote store was configured (remote.go).
	AuditRemote = "remote"
	// AuditUpload: recordings moved to the remote store.
	AuditUpload = "upload"
	// AuditRecompress: sealed recordings re-encoded at zstd's best level.
	AuditRecompress = "recompress"
)

// AuditEntry is one change to the archive as a person or a job made it.
// Entries are never rewritten: a second flag with a new note is a second
// entry, so the history keeps the first.
type AuditEntry struct {
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
	// Who is the token name, or "local:USER" for the archive's owner on
	// the command line, or "scheduler" for a scheduled prune.
	Who    string `json:"who"`
	Action string `json:"action"`
	// Recording is the recording the change is about (zero for changes to
	// the archive as a whole: policy, tokens, prune).
	Recording uuid.UUID `json:"recording,omitzero"`
	// Detail names what changed: the flag, the token, the policy, what a
	// prune removed.
	Detail string `json:"detail,omitempty"`
	// Reason is the note or reason the actor gave.
	Reason string `json:"reason,omitempty"`
	// Node is the node the change was made on, for an entry another node
	// of a shared catalog made (empty: this one).
	Node string `json:"node,omitempty"`
}

// AppendAudit records entries in one catalog commit, stamping each with
// the next sequence number and, when unset, the archive's clock. Callers
// append right after the change they record commits, so a crash between
// the two loses at worst the entry, never the change.
func (a *Archive) AppendAudit(entries ...AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	now := a.opts.Now().UTC()
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAudit)
		if err != nil {
			return err
		}
		byRec, err := tx.CreateBucketIfNotExists(bucketAuditRec)
		if err != nil {
			return err
		}
		b.FillPercent, byRec.FillPercent = 1.0, 1.0 // append-only keys
		for _, e := range entries {
			if e.Seq, err = b.NextSequence(); err != nil {
				return err
			}
			if e.At.IsZero() {
				e.At = now
			}
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(e.Seq), v); err != nil {
				return err
			}
			if e.Recording != uuid.Nil {
				if err := byRec.Put(auditRecKey(e.Recording, e.Seq), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive: audit log: %w", err)
	}
	return nil
}

// Audit returns audit entries newest first: those about recording id, or
// every entry when id is uuid.Nil. It returns at most limit entries
// (all when limit <= 0) with a sequence number below before (no bound
// when before is 0), so a caller can page back through the history.
func (a *Archive) Audit(id uuid.UUID, before uint64, limit int) ([]AuditEntry, error) {
	var out []AuditEntry
	full := func() bool { return limit > 0 && len(out) >= limit }
	err := a.catalog.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		if b == nil {
			return nil
		}
		add := func(v []byte) error {
			var e AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("entry: %w", err)
			}
			out = append(out, e)
			return nil
		}
		if id == uuid.Nil {
			c := b.Cursor()
			k, v := c.Last()
			if before > 0 {
				c.Seek(seqKey(before))
				k, v = c.Prev()
			}
			for ; k != nil && !full(); k, v = c.Prev() {
				if err := add(v); err != nil {
					return err
				}
			}
			return nil
		}
		byRec := tx.Bucket(bucketAuditRec)
		if byRec == nil {
			return nil
		}
		c := byRec.Cursor()
		end := before
		if end == 0 {
			end = ^uint64(0)
		}
		// The last key below id ‖ end is this recording's newest entry
		// before the bound; walk back while the keys are this recording's.
		k, _ := c.Seek(auditRecKey(id, end))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, id[:]) && !full(); k, _ = c.Prev() {
			if v := b.Get(auditRecEntry(k)); v != nil {
				if err := add(v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: audit log: %w", err)
	}
	return out, nil
}
