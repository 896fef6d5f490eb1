// Deleting recordings, and the moderator's marks on them: flags and holds.
//
// A delete is two phases. Mark: one catalog transaction removes the manifest
// and what hangs off it, logs the change for the index, and leaves a
// tombstone naming the shard and key owner of the chunks. Sweep: the chunks
// are deleted and the tombstone with them. A process killed between the two
// leaves a tombstone, and the next Sweep finishes the job.

package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// ErrHeld is returned when deleting a held recording.
var ErrHeld = errors.New("recording is held")

// Mark removes recordings from the catalog in one transaction and leaves
// tombstones for Sweep. Held recordings are refused (the whole mark fails)
// unless ignoreHold is set. It returns the manifests removed. Mark records
// no takedown: their bytes may be ingested again (TakeDown refuses them).
func (a *Archive) Mark(ctx context.Context, ids []uuid.UUID, ignoreHold bool) ([]*Manifest, error) {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	var removed []*Manifest
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, err := getManifest(tx, id)
			if err != nil {
				return err
			}
			if m.Hold != nil && !ignoreHold {
				return fmt.Errorf("%s: %w (%s): release it first", id, ErrHeld, m.Hold.Reason)
			}
			if err := markRemoved(tx, m); err != nil {
				return err
			}
			removed = append(removed, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: delete: %w", err)
	}
	return removed, nil
}

// markRemoved removes m from the catalog inside tx, leaves a tombstone for
// Sweep and logs the delete for the index.
func markRemoved(tx *bolt.Tx, m *Manifest) error {
	if err := removeCatalogEntries(tx, m); err != nil {
		return err
	}
	if err := putTombstone(tx, m); err != nil {
		return err
	}
	return appendChange(tx, ChangeDelete, m.ID)
}

// putTombstone leaves the tombstone of m's chunks for Sweep inside tx.
func putTombstone(tx *bolt.Tx, m *Manifest) error {
	owner := m.owner()
	v, err := json.Marshal(tombstone{Shard: m.Shard, Owner: owner, Stored: m.StoredBytes, ID: m.ID, Remote: m.Remote})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTombstones).Put(owner[:], v)
}

// sweepBatch is how many recordings Sweep deletes per shard transaction.
const sweepBatch = 1000

// Sweep deletes the chunks of every tombstoned recording and then the
// tombstones, one transaction per shard and batch of recordings, so a sweep
// of many recordings costs a few commits and a killed sweep keeps what it
// finished. It returns the shards it touched.
func (a *Archive) Sweep(ctx context.Context) ([]string, error) {
	var stones []tombstone
	err := a.catalog.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTombstones).ForEach(func(_, v []byte) error {
			var t tombstone
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			stones = append(stones, t)
			return nil
		})
	})
	if err != nil || len(stones) == 0 {
		return nil, err
	}
	// Bucket objects first; a tombstone whose objects could not be deleted
	// stays for the next sweep.
	failed, remoteErr := a.sweepRemote(ctx, stones)
	if failed != nil {
		kept := stones[:0]
		for _, t := range stones {
			if !failed[t.Owner] {
				kept = append(kept, t)
			}
		}
		stones = kept
	}
	byShard := map[string][]tombstone{}
	var shards []string
	for _, t := range stones {
		if byShard[t.Shard] == nil {
			shards = append(shards, t.Shard)
		}
		byShard[t.Shard] = append(byShard[t.Shard], t)
	}
	sort.Strings(shards)
	for _, shard := range shards {
		group := byShard[shard]
		for len(group) > 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			batch := group[:min(len(group), sweepBatch)]
			group = group[len(batch):]
			err := a.updateShard(shard, false, func(tx *bolt.Tx) error {
				s := chunksOf(tx)
				for _, t := range batch {
					if err := s.deleteOwner(t.Owner); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil && !errors.Is(err, errNoShard) {
				return nil, fmt.Errorf("archive: sweep shard %s: %w", shard, err)
			}
			err = a.catalog.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketTombstones)
				for _, t := range batch {
					if err := b.Delete(t.Owner[:]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("archive: sweep: %w", err)
			}
		}
	}
	if remoteErr != nil {
		return shards, fmt.Errorf("archive: sweep: %w", remoteErr)
	}
	return shards, nil
}

// Delete takes recording id down at once without saying who or why:
// TakeDown with empty DeleteOptions. Its bytes and identity are refused
// from then on.
func (a *Archive) Delete(ctx context.Context, id uuid.UUID) (*Manifest, error) {
	return a.TakeDown(ctx, id, DeleteOptions{})
}

// update applies fn to recording id's manifest in one transaction and logs
// the change for the index.
func (a *Archive) update(id uuid.UUID, fn func(*Manifest) error) (*Manifest, error) {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	var m *Manifest
	err := a.catalog.Update(func(tx *bolt.Tx) (err error) {
		if m, err = getManifest(tx, id); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		if err := putManifest(tx, m); err != nil {
			return err
		}
		return appendChange(tx, ChangePut, id)
	})
	return m, err
}

// Errors of flags and holds that name what is not there, or cannot be.
var (
	ErrBadFlagName = errors.New("a flag name is one word of at most 64 printable characters")
	ErrNotFlagged  = errors.New("recording has no such flag")
	ErrFileFlag    = errors.New("the flag comes from the file itself and cannot be removed")
	ErrNotHeld     = errors.New("recording is not held")
)

// FlagName returns name as a flag is named (spaces around it trimmed), or
// ErrBadFlagName.
func FlagName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return "", fmt.Errorf("flag name %q: %w", name, ErrBadFlagName)
	}
	return name, nil
}

// ErrBadFlagRange is returned for a flag's range that ends before it
// starts or starts before tick 0.
var ErrBadFlagRange = errors.New("a flag's range runs from a tick to the same or a later one")

// SetFlag adds (or updates the note of) a moderator's flag on the whole
// recording.
func (a *Archive) SetFlag(id uuid.UUID, name, note string) (*Manifest, error) {
	return a.SetFlagAt(id, name, note, nil)
}

// SetFlagAt adds a moderator's flag on the ticks of span (nil: the whole
// recording), or gives an existing flag of that name the new note and
// span: one flag per name, as flag:NAME finds it.
func (a *Archive) SetFlagAt(id uuid.UUID, name, note string, span *TickRange) (*Manifest, error) {
	name, err := FlagName(name)
	if err != nil {
		return nil, err
	}
	if span != nil {
		if span.From < 0 || span.To < span.From {
			return nil, fmt.Errorf("flag %q: ticks %d to %d: %w", name, span.From, span.To, ErrBadFlagRange)
		}
		span = &TickRange{From: span.From, To: span.To}
	}
	return a.update(id, func(m *Manifest) error {
		for i := range m.Flags {
			if m.Flags[i].Name == name {
				m.Flags[i].Note, m.Flags[i].Range = note, span
				return nil
			}
		}
		m.Flags = append(m.Flags, Flag{Name: name, Note: note, At: a.opts.Now().UTC(), Range: span})
		return nil
	})
}

// Unflag removes a moderator's flag. Flags the file itself carries stay.
func (a *Archive) Unflag(id uuid.UUID, name string) (*Manifest, error) {
	return a.update(id, func(m *Manifest) error {
		for i := range m.Flags {
			if m.Flags[i].Name == name {
				m.Flags = append(m.Flags[:i], m.Flags[i+1:]...)
				return nil
			}
		}
		for _, f := range m.Meta.Flags {
			if f == name {
				return fmt.Errorf("flag %q: %w", name, ErrFileFlag)
			}
		}
		return fmt.Errorf("flag %q: %w", name, ErrNotFlagged)
	})
}

// SetHold pins a recording against retention and deletion.
func (a *Archive) SetHold(id uuid.UUID, reason string) (*Manifest, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, errors.New("a hold needs a reason")
	}
	return a.update(id, func(m *Manifest) error {
		m.Hold = &Hold{Reason: reason, At: a.opts.Now().UTC()}
		return nil
	})
}

// Release removes a hold.
func (a *Archive) Release(id uuid.UUID) (*Manifest, error) {
	return a.update(id, func(m *Manifest) error {
		if m.Hold == nil {
			return ErrNotHeld
		}
		m.Hold = nil
		return nil
	})
}
