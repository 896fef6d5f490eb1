// Takedowns: a recording taken down is gone, and so are its bytes for good.
// The mark that removes the manifest also records the file's sha256 (with
// the id, who and why) in the takedowns bucket, in the same transaction;
// Commit refuses those bytes from then on, so re-scanning a server
// directory does not bring a taken-down game back. Only LiftTakedown lets
// them in again. Prune by retention is not a takedown and records nothing.

package archive

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// DeleteOptions say who takes a recording down, and why; both are kept
// with the takedown and given to whoever tries to ingest the file again.
type DeleteOptions struct {
	By     string
	Reason string
}

// Takedown is the record of a file taken down.
type Takedown struct {
	// SHA256 is the hex sha256 of the native file; ID the recording it was.
	SHA256 string    `json:"sha256"`
	ID     uuid.UUID `json:"id"`
	// Size is the file's size in bytes, which keeps an ingest reading
	// a file of that size before its parse (Archive.MayHoldSize); 0 in
	// takedowns recorded before it was kept.
	Size       int64     `json:"size,omitempty"`
	Format     string    `json:"format"`
	SourceName string    `json:"source_name,omitempty"`
	By         string    `json:"by,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	At         time.Time `json:"at"`
}

// TakenDownError is returned (and set in Result.Err) for bytes that were
// taken down: an HTTP layer answers it with 410 Gone.
type TakenDownError struct {
	Takedown Takedown
}

// Error names the takedown (who, when, why) that refused the bytes.
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
	return fmt.Sprintf("these bytes (sha256 %.12s…, recording %s) were taken down by %s at %s: %s; an admin can lift the takedown",
		t.SHA256, t.ID, by, t.At.UTC().Format(time.RFC3339), why)
}

// TakeDown removes recording id (refused while it is held) and remembers
// its bytes so they cannot be ingested again: mark and takedown record in
// one catalog transaction, then the sweep. A sweep that fails after the
// mark committed returns a *SweepError: the takedown took effect.
func (a *Archive) TakeDown(ctx context.Context, id uuid.UUID, opts DeleteOptions) (*Manifest, error) {
	a.commitMu.Lock()
	var m *Manifest
	err := a.catalog.Update(func(tx *bolt.Tx) (err error) {
		if m, err = getManifest(tx, id); err != nil {
			return err
		}
		if m.Hold != nil {
			return fmt.Errorf("%s: %w (%s): release it first", id, ErrHeld, m.Hold.Reason)
		}
		if err := markRemoved(tx, m); err != nil {
			return err
		}
		return putTakedown(tx, Takedown{
			SHA256: m.SHA256, ID: m.ID, Size: m.NativeBytes, Format: m.Format, SourceName: m.SourceName,
			By: opts.By, Reason: opts.Reason, At: a.opts.Now().UTC(),
		})
	})
	a.commitMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("archive: take down: %w", err)
	}
	if _, err := a.Sweep(ctx); err != nil {
		return m, &SweepError{IDs: []uuid.UUID{id}, Err: err}
	}
	return m, nil
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
	return fmt.Sprintf("archive: deleted %d recording(s) from the catalog, but removing their chunks failed (%v): the delete took effect; the next delete, prune or check --repair finishes it", len(e.IDs), e.Err)
}

// Unwrap returns the sweep's error.
func (e *SweepError) Unwrap() error { return e.Err }

// putTakedown records t under its sha256.
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
	if t.Size <= 0 {
		return nil
	}
	return tx.Bucket(bucketSourceSizes).Put(sourceSizeKey(t.Size, sum), nil)
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
	return t, nil
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
		return tx.Bucket(bucketTakedowns).ForEach(func(k, v []byte) error {
			var t Takedown
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("takedown record %x: %w", k, err)
			}
			out = append(out, t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: takedowns: %w", err)
	}
	return out, nil
}

// ErrNoTakedown is returned by LiftTakedown for bytes never taken down.
var ErrNoTakedown = errors.New("no takedown for these bytes")

// LiftTakedown forgets the takedown of the file whose hex sha256 is sha (an
// admin's decision): its bytes can be ingested again. It returns the
// takedown lifted.
func (a *Archive) LiftTakedown(sha string) (*Takedown, error) {
	sum, err := hex.DecodeString(sha)
	if err != nil || len(sum) != 32 {
		return nil, fmt.Errorf("archive: lift takedown: %q is not a hex sha256", sha)
	}
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	var t *Takedown
	err = a.catalog.Update(func(tx *bolt.Tx) (err error) {
		if t, err = takedownOf(tx, sum); err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("sha256 %s: %w", sha, ErrNoTakedown)
		}
		if t.Size > 0 && tx.Bucket(bucketSources).Get(sum) == nil {
			if err := tx.Bucket(bucketSourceSizes).Delete(sourceSizeKey(t.Size, sum)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketTakedowns).Delete(sum)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: lift takedown: %w", err)
	}
	return t, nil
}
