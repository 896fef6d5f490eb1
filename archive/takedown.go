// Takedowns: a recording taken down is hidden at once from every read and
// from search, and its bytes and identity are refused at ingest from then
// on. The mark that hides it records the takedown in the takedowns bucket,
// in the same transaction, with the identity it refuses besides the bytes
// (the recording id, the id the file names, its session; the
// takedown_idents bucket), so a clip, a redacted copy or a live regrowth
// of the same game does not bring it back on any path in.
//
// A takedown with a grace period keeps the manifest, heads, events and
// chunks until its purge time: UndoTakedown restores the recording within
// it, PurgeTakedowns (the janitor) deletes what is due. One without grace
// (a legal order) is purged at once. Only LiftTakedown, after the purge,
// lets the bytes and identity in again. Prune by retention is not a
// takedown and records nothing.

package archive

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// DefaultGrace is how long a takedown keeps a recording's bytes for an
// undo unless told otherwise: long enough to notice a wrong id.
const DefaultGrace = 7 * 24 * time.Hour

// Audit actions of a takedown's grace period.
const (
	AuditUndoTakedown  = "undo-takedown"
	AuditPurgeTakedown = "purge-takedown"
)

// DeleteOptions say who takes a recording down, why, and for how long its
// bytes are kept; who and why are kept with the takedown and given to
// whoever tries to ingest the file again.
type DeleteOptions struct {
	By     string
	Reason string
	// Grace keeps the recording's bytes (hidden) that long, for
	// UndoTakedown; 0 purges them at once.
	Grace time.Duration
	// Publish, when set, tells the other nodes (a shared catalog) of the
	// takedown before this catalog changes: if this node fails after, the
	// others still refuse the bytes, and this node learns it again from
	// them. With it, a node that only reads the bucket may take down too.
	Publish func(context.Context, *Takedown) error
}

// Takedown states.
const (
	// TakedownPending: the recording is hidden, its bytes are kept until
	// PurgeAt and UndoTakedown restores it.
	TakedownPending = "pending"
	// TakedownPurged: the bytes are gone; only the record is left.
	TakedownPurged = "purged"
)

// Takedown is the record of a file taken down.
type Takedown struct {
	// SHA256 is the hex sha256 of the native file; ID the recording it was.
	SHA256 string    `json:"sha256"`
	ID     uuid.UUID `json:"id"`
	// MetaID is the id the file names (formats.Metadata.ID), when it names
	// one, and Session its session or world: ingest refuses both, as it
	// refuses the bytes. Absent in takedowns recorded before they were kept.
	MetaID  uuid.UUID `json:"meta_id,omitzero"`
	Session string    `json:"session,omitempty"`
	// Size is the file's size in bytes, which keeps an ingest reading
	// a file of that size before its parse (Archive.MayHoldSize); 0 in
	// takedowns recorded before it was kept.
	Size       int64     `json:"size,omitempty"`
	Format     string    `json:"format"`
	SourceName string    `json:"source_name,omitempty"`
	By         string    `json:"by,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	At         time.Time `json:"at"`
	// State is TakedownPending or TakedownPurged; PurgeAt is when a
	// pending one's bytes are purged (when they were, once purged).
	State   string    `json:"state"`
	PurgeAt time.Time `json:"purge_at,omitzero"`
}

// TakenDownError is returned (and set in Result.Err) for bytes or a
// recording identity that were taken down: an HTTP layer answers it with
// 410 Gone.
type TakenDownError struct {
	Takedown Takedown
}

// Error names the takedown (who, when, why) that refused the recording.
func (e *TakenDownError) Error() string {
	t := e.Takedown
	by := t.By
	if by == "" {
		by = "an unnamed moderator"
	}
	why := t.Reason
	if why == "" {
		why = "no reason given"
	}
	then := "an admin can lift the takedown"
	if t.State == TakedownPending {
		then = fmt.Sprintf("its bytes are kept until %s, when a moderator can still undo it", t.PurgeAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("recording %s (sha256 %.12s…) was taken down by %s at %s: %s; %s",
		t.ID, t.SHA256, by, t.At.UTC().Format(time.RFC3339), why, then)
}

// ErrNoTakedown is returned for a recording or bytes never taken down.
var ErrNoTakedown = errors.New("no takedown")

// ErrTakedownPurged is returned by UndoTakedown once the bytes are gone.
var ErrTakedownPurged = errors.New("the takedown's grace period is over: its bytes are purged")

// ErrTakedownPending is returned by LiftTakedown while the recording's
// bytes are still kept: lifting it would let a copy in beside them.
var ErrTakedownPending = errors.New("the takedown is still in its grace period")

// TakeDown hides recording id (refused while it is held) and remembers its
// bytes and identity so they cannot be ingested again: mark and takedown
// record in one catalog transaction (TakenDown gives the record). With
// opts.Grace its bytes are kept that long for UndoTakedown; without, they
// are swept at once. A sweep
// that fails after the mark committed returns a *SweepError: the takedown
// took effect. With a remote store the takedown goes to the bucket first
// (takedowns/<sha256>, for every node's sync); a node that only reads the
// bucket refuses it (ErrReadingNode).
func (a *Archive) TakeDown(ctx context.Context, id uuid.UUID, opts DeleteOptions) (*Manifest, error) {
	now := a.opts.Now().UTC()
	store, err := a.takedownStore(ctx)
	if errors.Is(err, ErrReadingNode) && opts.Publish != nil {
		store, err = nil, nil // the shared catalog carries it
	}
	if err != nil {
		return nil, fmt.Errorf("archive: take down %s: %w", id, err)
	}
	newTakedown := func(tx *bolt.Tx) (*Manifest, *Takedown, error) {
		m, err := getManifest(tx, id)
		if err != nil {
			return nil, nil, err
		}
		if m.Hold != nil {
			return nil, nil, fmt.Errorf("%s: %w (%s): release it first", id, ErrHeld, m.Hold.Reason)
		}
		t := &Takedown{
			SHA256: m.SHA256, ID: m.ID, MetaID: m.Meta.ID, Session: m.Meta.Session,
			Size: m.NativeBytes, Format: m.Format, SourceName: m.SourceName,
			By: opts.By, Reason: opts.Reason, At: now, State: TakedownPurged, PurgeAt: now,
		}
		if opts.Grace > 0 {
			t.State, t.PurgeAt = TakedownPending, now.Add(opts.Grace)
		}
		return m, t, nil
	}
	if store != nil || opts.Publish != nil {
		// The bucket and the shared catalog first: if this node fails
		// after, its next sync applies the takedown here too.
		var t *Takedown
		err := a.catalog.View(func(tx *bolt.Tx) (err error) {
			_, t, err = newTakedown(tx)
			return err
		})
		if err == nil && store != nil {
			err = putBucketTakedown(ctx, store, t)
		}
		if err == nil && opts.Publish != nil {
			err = opts.Publish(ctx, t)
		}
		if err != nil {
			return nil, fmt.Errorf("archive: take down: %w", err)
		}
	}
	a.commitMu.Lock()
	var m *Manifest
	err = a.catalog.Update(func(tx *bolt.Tx) (err error) {
		var t *Takedown
		if m, t, err = newTakedown(tx); err != nil {
			return err
		}
		if opts.Grace > 0 {
			err = hideTakenDown(tx, m)
		} else {
			err = markRemoved(tx, m)
		}
		if err != nil {
			return err
		}
		return putTakedown(tx, *t)
	})
	a.commitMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("archive: take down: %w", err)
	}
	if opts.Grace > 0 {
		return m, nil
	}
	if _, err := a.Sweep(ctx); err != nil {
		return m, &SweepError{IDs: []uuid.UUID{id}, Err: err}
	}
	return m, nil
}

// hideTakenDown takes m out of every read inside tx (the manifest, its
// source and session entries; the change log drops it from the index)
// and keeps its manifest in bucketTakenDown; heads, events, live state and
// chunks stay where they are until the purge.
func hideTakenDown(tx *bolt.Tx, m *Manifest) error {
	sum, err := hexSum(m.SHA256)
	if err != nil {
		return fmt.Errorf("manifest %s: %w", m.ID, err)
	}
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	kept, err := tx.CreateBucketIfNotExists(bucketTakenDown)
	if err != nil {
		return err
	}
	if err := kept.Put(m.ID[:], v); err != nil {
		return err
	}
	if err := tx.Bucket(bucketRecordings).Delete(m.ID[:]); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSessions).Delete(sessionKey(m.Meta.Session, m.ID)); err != nil {
		return err
	}
	if err := deleteSource(tx, sum, m.NativeBytes); err != nil {
		return err
	}
	return appendChange(tx, ChangeDelete, m.ID)
}

// SweepError is returned when recordings were removed from the catalog (the
// delete took effect: they are gone from every read and from search) but
// deleting their chunks failed, e.g. on a full disk. The chunks are
// unreachable; the next delete, prune or `check --repair` removes them.
type SweepError struct {
	IDs []uuid.UUID
	Err error
}

// Error says the delete took effect and what finishes the sweep.
func (e *SweepError) Error() string {
	return fmt.Sprintf("archive: deleted %d recording(s) from the catalog, but removing their chunks failed (%v): the delete took effect; the next delete, prune or repairing Check finishes it", len(e.IDs), e.Err)
}

// Unwrap returns the sweep's error.
func (e *SweepError) Unwrap() error { return e.Err }

// putTakedown records t under its sha256, with its identities and size.
func putTakedown(tx *bolt.Tx, t Takedown) error {
	sum, err := hex.DecodeString(t.SHA256)
	if err != nil || len(sum) != 32 {
		return fmt.Errorf("takedown of %s: bad sha256 %q", t.ID, t.SHA256)
	}
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketTakedowns).Put(sum, v); err != nil {
		return err
	}
	idents, err := tx.CreateBucketIfNotExists(bucketTakedownIdents)
	if err != nil {
		return err
	}
	for _, k := range t.identKeys(sum) {
		if err := idents.Put(k, nil); err != nil {
			return err
		}
	}
	if t.Size <= 0 {
		return nil
	}
	return tx.Bucket(bucketSourceSizes).Put(sourceSizeKey(t.Size, sum), nil)
}

// identKeys are t's bucketTakedownIdents keys.
func (t *Takedown) identKeys(sum []byte) [][]byte {
	keys := [][]byte{append(identIDPrefix(t.ID), sum...)}
	if t.MetaID != uuid.Nil && t.MetaID != t.ID {
		keys = append(keys, append(identIDPrefix(t.MetaID), sum...))
	}
	if t.Session != "" {
		keys = append(keys, append(identSessionPrefix(t.Session), sum...))
	}
	return keys
}

// coverID adds recording id to the identities takedown t refuses inside
// tx: a copy refused by identity on its way in (CatchUp) is gone (410),
// not unknown, under its own id too.
func coverID(tx *bolt.Tx, t *Takedown, id uuid.UUID) error {
	sum, err := hexSum(t.SHA256)
	if err != nil {
		return err
	}
	idents, err := tx.CreateBucketIfNotExists(bucketTakedownIdents)
	if err != nil {
		return err
	}
	return idents.Put(append(identIDPrefix(id), sum...), nil)
}

// deleteTakedown forgets t inside tx: its record and every identity it
// refuses, and its size unless an archived file has it too.
func deleteTakedown(tx *bolt.Tx, t *Takedown, sum []byte) error {
	if idents := tx.Bucket(bucketTakedownIdents); idents != nil {
		var mine [][]byte
		err := idents.ForEach(func(k, _ []byte) error {
			if bytes.HasSuffix(k, sum) {
				mine = append(mine, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range mine {
			if err := idents.Delete(k); err != nil {
				return err
			}
		}
	}
	if t.Size > 0 && tx.Bucket(bucketSources).Get(sum) == nil {
		if err := tx.Bucket(bucketSourceSizes).Delete(sourceSizeKey(t.Size, sum)); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketTakedowns).Delete(sum)
}

// indexTakedownIdents fills a new bucketTakedownIdents from the takedowns
// of a catalog written before it: once, at a writable Open.
func indexTakedownIdents(tx *bolt.Tx) error {
	if tx.Bucket(bucketTakedownIdents) != nil {
		return nil
	}
	idents, err := tx.CreateBucket(bucketTakedownIdents)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTakedowns).ForEach(func(sum, v []byte) error {
		var t Takedown
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("takedown record %x: %w", sum, err)
		}
		for _, k := range t.identKeys(sum) {
			if err := idents.Put(k, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// takedownOf returns the takedown recorded for sum, or nil.
func takedownOf(tx *bolt.Tx, sum []byte) (*Takedown, error) {
	v := tx.Bucket(bucketTakedowns).Get(sum)
	if v == nil {
		return nil, nil
	}
	t := new(Takedown)
	if err := json.Unmarshal(v, t); err != nil {
		return nil, fmt.Errorf("takedown record %x: %w", sum, err)
	}
	if t.State == "" {
		t.State = TakedownPurged // recorded before grace periods: purged at once
	}
	return t, nil
}

// takedownOfIdentity returns the takedown that refuses a recording with id
// (uuid.Nil: none) or session (""), or nil.
func takedownOfIdentity(tx *bolt.Tx, id uuid.UUID, session string) (*Takedown, error) {
	idents := tx.Bucket(bucketTakedownIdents)
	if idents == nil {
		return nil, nil // a read-only open of a catalog written before it
	}
	var prefixes [][]byte
	if id != uuid.Nil {
		prefixes = append(prefixes, identIDPrefix(id))
	}
	if session != "" {
		prefixes = append(prefixes, identSessionPrefix(session))
	}
	for _, p := range prefixes {
		k, _ := idents.Cursor().Seek(p)
		if k != nil && bytes.HasPrefix(k, p) && len(k) == len(p)+32 {
			return takedownOf(tx, k[len(p):])
		}
	}
	return nil, nil
}

// takedownRefusing returns the takedown that refuses a recording with
// bytes sum, the id its file names (uuid.Nil: none) and session, or nil.
func takedownRefusing(tx *bolt.Tx, sum []byte, id uuid.UUID, session string) (*Takedown, error) {
	if t, err := takedownOf(tx, sum); t != nil || err != nil {
		return t, err
	}
	return takedownOfIdentity(tx, id, session)
}

// TakenDown returns the takedown of the bytes whose sha256 is sum, or nil
// if they were never taken down. Ingest asks before parsing a file.
func (a *Archive) TakenDown(sum []byte) (*Takedown, error) {
	var t *Takedown
	err := a.catalog.View(func(tx *bolt.Tx) (err error) {
		t, err = takedownOf(tx, sum)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return t, nil
}

// Takedowns lists every takedown, by sha256.
func (a *Archive) Takedowns() ([]Takedown, error) {
	var out []Takedown
	err := a.catalog.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTakedowns).ForEach(func(k, _ []byte) error {
			t, err := takedownOf(tx, k)
			if err != nil {
				return err
			}
			out = append(out, *t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: takedowns: %w", err)
	}
	return out, nil
}

// LiftTakedown forgets the purged takedown of the file whose hex sha256 is
// sha (an admin's decision): its bytes and identity can be ingested again.
// A takedown in its grace period is refused (ErrTakedownPending): undo it,
// or purge it first. It returns the takedown lifted.
func (a *Archive) LiftTakedown(ctx context.Context, sha string) (*Takedown, error) {
	sum, err := hexSum(sha)
	if err != nil {
		return nil, fmt.Errorf("archive: lift takedown: %q is not a hex sha256", sha)
	}
	check := func(tx *bolt.Tx) (t *Takedown, err error) {
		if t, err = takedownOf(tx, sum); err != nil {
			return nil, err
		}
		if t == nil {
			return nil, fmt.Errorf("sha256 %s: %w", sha, ErrNoTakedown)
		}
		if t.State == TakedownPending {
			return nil, fmt.Errorf("recording %s: %w (its bytes are kept until %s): undo it, or purge it first",
				t.ID, ErrTakedownPending, t.PurgeAt.UTC().Format(time.RFC3339))
		}
		return t, nil
	}
	// The bucket's copy first (on a writing node): else this node's next
	// sync would record it again.
	err = a.catalog.View(func(tx *bolt.Tx) error { _, err := check(tx); return err })
	if err == nil {
		err = a.deleteBucketTakedown(ctx, hex.EncodeToString(sum))
	}
	if err != nil {
		return nil, fmt.Errorf("archive: lift takedown: %w", err)
	}
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	var t *Takedown
	err = a.catalog.Update(func(tx *bolt.Tx) (err error) {
		if t, err = check(tx); err != nil {
			return err
		}
		return deleteTakedown(tx, t, sum)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: lift takedown: %w", err)
	}
	return t, nil
}

// UndoTakedown restores recording id, taken down within its grace period,
// as it was: listed, searchable (the change log re-indexes it) and
// readable, its bytes and identity no longer refused. It returns the
// recording and the takedown undone.
func (a *Archive) UndoTakedown(ctx context.Context, id uuid.UUID) (*Manifest, *Takedown, error) {
	// The bucket's copy first (on a writing node): else this node's next
	// sync would take the recording down again.
	var sha string
	err := a.catalog.View(func(tx *bolt.Tx) error {
		m, _, err := keptTakenDown(tx, id)
		if err == nil {
			sha = m.SHA256
		}
		return err
	})
	if err == nil {
		err = a.deleteBucketTakedown(ctx, sha)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("archive: undo takedown: %w", err)
	}
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	var m *Manifest
	var t *Takedown
	err = a.catalog.Update(func(tx *bolt.Tx) (err error) {
		if m, t, err = keptTakenDown(tx, id); err != nil {
			return err
		}
		if tx.Bucket(bucketRecordings).Get(id[:]) != nil {
			return fmt.Errorf("%s: a recording with this id is archived again", id)
		}
		sum, err := hexSum(m.SHA256)
		if err != nil {
			return err
		}
		if err := deleteTakedown(tx, t, sum); err != nil {
			return err
		}
		if err := putManifest(tx, m); err != nil {
			return err
		}
		if err := putSource(tx, sum, m.NativeBytes, m.ID); err != nil {
			return err
		}
		if m.Meta.Session != "" {
			if err := tx.Bucket(bucketSessions).Put(sessionKey(m.Meta.Session, m.ID), nil); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketTakenDown).Delete(id[:]); err != nil {
			return err
		}
		return appendChange(tx, ChangePut, id)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("archive: undo takedown: %w", err)
	}
	return m, t, nil
}

// keptTakenDown returns the manifest kept for recording id in its grace
// period and its takedown: ErrTakedownPurged (with the *TakenDownError)
// once purged, ErrNoTakedown (and ErrNotFound) for a recording never taken
// down.
func keptTakenDown(tx *bolt.Tx, id uuid.UUID) (*Manifest, *Takedown, error) {
	var v []byte
	if kept := tx.Bucket(bucketTakenDown); kept != nil {
		v = kept.Get(id[:])
	}
	if v == nil {
		if t, err := takedownOfIdentity(tx, id, ""); err != nil {
			return nil, nil, err
		} else if t != nil && t.ID == id {
			return nil, nil, fmt.Errorf("recording %s: %w: %w", id, ErrTakedownPurged, &TakenDownError{Takedown: *t})
		}
		return nil, nil, fmt.Errorf("recording %s: %w: %w", id, ErrNoTakedown, ErrNotFound)
	}
	m, err := decodeManifest(v)
	if err != nil {
		return nil, nil, fmt.Errorf("taken-down manifest %s: %w", id, err)
	}
	sum, err := hexSum(m.SHA256)
	if err != nil {
		return nil, nil, err
	}
	t, err := takedownOf(tx, sum)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, fmt.Errorf("taken-down recording %s has no takedown record", id)
	}
	return m, t, nil
}

// keptManifests returns the manifests kept for takedowns in their grace
// period: their chunks, heads and events are not orphans.
func keptManifests(tx *bolt.Tx) ([]*Manifest, error) {
	kept := tx.Bucket(bucketTakenDown)
	if kept == nil {
		return nil, nil
	}
	var out []*Manifest
	err := kept.ForEach(func(k, v []byte) error {
		m, err := decodeManifest(v)
		if err != nil {
			return fmt.Errorf("taken-down manifest %x: %w", k, err)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// keptForPurge returns the manifests kept for takedowns in their grace
// period.
func (a *Archive) keptForPurge() ([]*Manifest, error) {
	var kept []*Manifest
	err := a.catalog.View(func(tx *bolt.Tx) (err error) {
		kept, err = keptManifests(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return kept, nil
}

// PurgeTakedowns deletes the bytes of takedowns whose grace period is over
// (or, with ids, of those recordings at once, a legal order's): the kept
// manifest, heads and events in one catalog transaction that marks each
// takedown purged and leaves tombstones, then the chunks (Sweep). It
// returns the takedowns purged. A sweep that fails after the purge
// committed returns them with a *SweepError.
func (a *Archive) PurgeTakedowns(ctx context.Context, ids ...uuid.UUID) ([]Takedown, error) {
	now := a.opts.Now().UTC()
	a.commitMu.Lock()
	var purged []Takedown
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		due, err := dueTakedowns(tx, now, ids)
		if err != nil {
			return err
		}
		for _, id := range due {
			if err := ctx.Err(); err != nil {
				return err
			}
			t, err := purgeTakenDown(tx, id, now)
			if err != nil {
				return err
			}
			purged = append(purged, *t)
		}
		return nil
	})
	a.commitMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("archive: purge takedowns: %w", err)
	}
	if len(purged) == 0 {
		return nil, nil
	}
	if _, err := a.Sweep(ctx); err != nil {
		swept := make([]uuid.UUID, len(purged))
		for i, t := range purged {
			swept[i] = t.ID
		}
		return purged, &SweepError{IDs: swept, Err: err}
	}
	return purged, nil
}

// dueTakedowns returns the kept recordings to purge: ids (each must be
// kept), or those whose purge time has come.
func dueTakedowns(tx *bolt.Tx, now time.Time, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) > 0 {
		for _, id := range ids {
			if _, _, err := keptTakenDown(tx, id); err != nil {
				return nil, err
			}
		}
		return ids, nil
	}
	kept, err := keptManifests(tx)
	if err != nil {
		return nil, err
	}
	var due []uuid.UUID
	for _, m := range kept {
		_, t, err := keptTakenDown(tx, m.ID)
		if err != nil {
			return nil, err
		}
		if !now.Before(t.PurgeAt) {
			due = append(due, m.ID)
		}
	}
	return due, nil
}

// purgeTakenDown deletes what a kept recording left in the catalog inside
// tx, leaves a tombstone for its chunks and marks its takedown purged.
func purgeTakenDown(tx *bolt.Tx, id uuid.UUID, now time.Time) (*Takedown, error) {
	m, t, err := keptTakenDown(tx, id)
	if err != nil {
		return nil, err
	}
	if err := tx.Bucket(bucketHeads).Delete(id[:]); err != nil {
		return nil, err
	}
	if err := deleteEvents(tx, id); err != nil {
		return nil, err
	}
	if live := tx.Bucket(bucketLive); live != nil {
		if err := live.Delete(id[:]); err != nil {
			return nil, err
		}
	}
	if err := tx.Bucket(bucketTakenDown).Delete(id[:]); err != nil {
		return nil, err
	}
	if err := putTombstone(tx, m); err != nil {
		return nil, err
	}
	t.State, t.PurgeAt = TakedownPurged, now
	return t, putTakedown(tx, *t)
}
