// The write path's second half: Commit commits one or more finished
// Pending recordings (pending.go) as a group: their ids decided against
// the catalog, chunk blobs into their shards first, then every manifest in
// one catalog transaction.

package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// idNamespace is the UUIDv5 namespace of recording ids derived from the
// sha256 of their native bytes.
var idNamespace = uuid.MustParse("6f1e8a52-3c1b-4d8e-9a57-0b7c1d2e3f40")

// IDFromSHA256 returns the id a recording gets when its file does not name
// one: a UUIDv5 over its sha256, so ingesting the same bytes twice is
// idempotent.
func IDFromSHA256(sum []byte) uuid.UUID { return uuid.NewSHA1(idNamespace, sum) }

// Outcome says what happened to one input: what committing it did, or
// (Failed, Skipped: ingest's own) why it never reached a commit. Its words
// (String) are what archivectl prints and what ingest's JSON holds; they
// are stable.
type Outcome int

// Outcomes of a commit and of ingest. Only Ingested and Replaced write
// anything; Commit gives neither Failed nor Skipped.
const (
	// Ingested: a new recording was added.
	Ingested Outcome = iota
	// Duplicate: a recording with the same sha256 was already archived.
	Duplicate
	// Replaced: a growing recording replaced its earlier, shorter copy.
	Replaced
	// TakenDown: the bytes were taken down; Result.Err is a
	// *TakenDownError saying by whom, when and why.
	TakenDown
	// Refused: the recording names an archived recording it may not
	// replace; Result.Err is a *ReplaceError saying why.
	Refused
	// Expired: the recording started longer ago than the stored retention
	// policy's MaxAge, so a prune would remove it at once (a re-scan of a
	// server directory must not bring pruned games back).
	Expired
	// Failed: ingest could not read, detect or split the input.
	Failed
	// Skipped: a file of no known format met while walking a directory (a
	// named file of no known format fails instead), or an entry the walk
	// does not follow (a link loop, a link out of the tree, a named pipe
	// inside a directory).
	Skipped
)

var outcomeWords = [...]string{
	Ingested:  "ingested",
	Duplicate: "already archived",
	Replaced:  "replaced",
	TakenDown: "taken down",
	Refused:   "refused",
	Expired:   "expired",
	Failed:    "failed",
	Skipped:   "skipped",
}

// String returns the outcome's word.
func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeWords) {
		return outcomeWords[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// MarshalText writes the outcome's word, so JSON output holds the words.
func (o Outcome) MarshalText() ([]byte, error) {
	if o < 0 || int(o) >= len(outcomeWords) {
		return nil, fmt.Errorf("archive: unknown outcome %d", int(o))
	}
	return []byte(outcomeWords[o]), nil
}

// UnmarshalText reads an outcome's word, for clients of the JSON output.
func (o *Outcome) UnmarshalText(b []byte) error {
	for k, w := range outcomeWords {
		if w == string(b) {
			*o = Outcome(k)
			return nil
		}
	}
	return fmt.Errorf("archive: unknown outcome %q", b)
}

// writes reports whether the outcome adds a recording to the archive.
func (o Outcome) writes() bool { return o == Ingested || o == Replaced }

// Result is the outcome of committing one pending recording.
type Result struct {
	ID      uuid.UUID
	Outcome Outcome
	// Note explains an id change (the file's own id was taken by other
	// bytes) or an Expired recording.
	Note string
	// Err says why a TakenDown or Refused recording was not archived.
	Err error
	// Manifest is the committed manifest (nil unless Ingested or Replaced).
	Manifest *Manifest
}

// ReplaceError refuses a recording that names an archived recording
// (Metadata.ID) and claims to be a grown copy of it, but is not: another
// format, another session, a held recording, or chunks that differ from
// the archived ones. Nothing is archived: ids cannot be hijacked.
type ReplaceError struct {
	ID     uuid.UUID
	Reason string
}

// Error says which recording was not replaced and why.
func (e *ReplaceError) Error() string {
	return fmt.Sprintf("refused: the input names recording %s but may not replace it: %s", e.ID, e.Reason)
}

// Commit commits pending recordings as one group: blobs into their shards,
// then every manifest in one catalog transaction. Recordings whose bytes are
// already archived are reported as Duplicate, bytes taken down as TakenDown,
// recordings older than the stored retention policy's MaxAge as Expired, and
// a growing recording that may not replace the recording it names as
// Refused; none of these is written (chunks they spilled are removed). All
// pendings must have been Finished.
//
// The first recordings of a format that has no heads dictionary train one
// once there are enough of them (dicts.go).
func (a *Archive) Commit(ctx context.Context, pend []*Pending) ([]Result, error) {
	results, err := a.commit(ctx, pend)
	if err == nil {
		a.learnHeads(ctx, results)
	}
	return results, err
}

// commit is Commit without the dictionaries' training.
func (a *Archive) commit(ctx context.Context, pend []*Pending) ([]Result, error) {
	results := make([]Result, len(pend))
	// Decide ids against the catalog as it is now. This process is the only
	// writer (bbolt's lock); commitMu keeps goroutines of it from racing.
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	now := a.opts.Now().UTC()
	var replaced []*Manifest
	sweepFirst := false
	err := a.catalog.View(func(tx *bolt.Tx) error {
		policy, err := storedPolicy(tx)
		if err != nil {
			return err
		}
		seen := map[string]uuid.UUID{}    // sha256 → id decided in this group
		claimed := map[uuid.UUID]string{} // id → hex sha256 of the group's file that took it
		for i, p := range pend {
			if p.meta == nil {
				return fmt.Errorf("pending %d not finished", i)
			}
			if v := tx.Bucket(bucketSources).Get(p.sum); v != nil {
				results[i] = Result{ID: uuid.UUID(v), Outcome: Duplicate}
				continue
			}
			if id, ok := seen[string(p.sum)]; ok {
				results[i] = Result{ID: id, Outcome: Duplicate}
				continue
			}
			if t, err := takedownRefusing(tx, p.sum, p.meta.ID, p.meta.Session); err != nil {
				return err
			} else if t != nil {
				results[i] = Result{ID: t.ID, Outcome: TakenDown, Err: &TakenDownError{Takedown: *t}}
				continue
			}
			id := p.meta.ID
			if id == uuid.Nil {
				id = IDFromSHA256(p.sum)
			}
			if note := expired(policy, p, now); note != "" {
				results[i] = Result{ID: id, Outcome: Expired, Note: note}
				continue
			}
			if sum, ok := claimed[id]; ok && p.meta.ID != uuid.Nil {
				// An earlier file of this group took the id: decided as if
				// it had been committed first.
				derived := IDFromSHA256(p.sum)
				results[i].Note = ownIDTakenNote(id, sum, derived)
				id = derived
			} else if old, err := getManifest(tx, id); p.meta.ID != uuid.Nil && err == nil {
				if p.meta.Growing && !old.Live {
					if err := canReplace(old, p); err != nil {
						results[i] = Result{ID: id, Outcome: Refused, Err: err}
						continue
					}
					results[i].Outcome = Replaced
					replaced = append(replaced, old)
				} else {
					derived := IDFromSHA256(p.sum)
					results[i].Note = ownIDTakenNote(id, old.SHA256, derived)
					if old.Live {
						// Live recordings grow by their own path (live.go).
						results[i].Note = fmt.Sprintf("the input names live recording %s, which it does not extend; archived as %s", id, derived)
					}
					id = derived
				}
			}
			results[i].ID = id
			seen[string(p.sum)] = id
			claimed[id] = hex.EncodeToString(p.sum)
			// Bytes deleted but not yet swept come back under the same
			// chunk keys: the pending sweep must run first, or it would
			// delete the new chunks.
			if owner := p.chunkOwner(id); tx.Bucket(bucketTombstones).Get(owner[:]) != nil {
				sweepFirst = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: commit: %w", err)
	}
	// A grown copy replaces the archived one only if the archived chunks
	// are its first chunks, byte for byte (read back, outside the catalog
	// transaction; commitMu keeps the old copy as it is meanwhile).
	for i, p := range pend {
		if results[i].Outcome != Replaced {
			continue
		}
		if err := a.checkPrefix(ctx, replacedOf(replaced, results[i].ID), p); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			results[i] = Result{ID: results[i].ID, Outcome: Refused, Err: err}
		}
	}
	a.firstDicts(pend, results)
	defer a.dropUnwritten(pend, results)
	defer func() {
		for _, p := range pend {
			p.landed()
		}
	}()
	if sweepFirst {
		if _, err := a.Sweep(ctx); err != nil {
			return nil, fmt.Errorf("archive: commit: finish a pending delete: %w", err)
		}
	}

	// Blobs first, grouped per shard, one transaction each.
	type shardWrite struct {
		ids   []uuid.UUID
		ticks [][]int64
		blobs [][][]byte
	}
	writes := map[string]*shardWrite{}
	for i, p := range pend {
		if !results[i].Outcome.writes() {
			continue
		}
		if p.shard == "" {
			start := p.meta.Start
			if start.IsZero() {
				start = now
			}
			p.shard = a.opts.ShardPeriod(start)
		}
		w := writes[p.shard]
		if w == nil {
			w = &shardWrite{}
			writes[p.shard] = w
		}
		owner := p.chunkOwner(results[i].ID)
		a.writing.add(owner)
		defer a.writing.done(owner) // once the manifests are committed
		w.ids = append(w.ids, owner)
		w.ticks = append(w.ticks, p.ticks)
		w.blobs = append(w.blobs, p.blobs)
	}
	for shard, w := range writes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := a.updateShard(shard, true, func(tx *bolt.Tx) error {
			s := chunksOf(tx)
			s.chunks.FillPercent = 1.0
			for j, id := range w.ids {
				for k, blob := range w.blobs[j] {
					if err := s.put(chunkKey(id, w.ticks[j][k]), blob); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("archive: write chunks to shard %s: %w", shard, err)
		}
	}

	// Then every manifest in one catalog transaction.
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		for i, p := range pend {
			if !results[i].Outcome.writes() {
				continue
			}
			m, err := a.buildManifest(p, results[i].ID, now)
			if err != nil {
				return err
			}
			if results[i].Outcome == Replaced {
				if old, err := getManifest(tx, m.ID); err == nil {
					m.Flags, m.Hold = old.Flags, old.Hold
					if err := removeCatalogEntries(tx, old); err != nil {
						return err
					}
				}
			}
			if err := a.putRecording(tx, m, p); err != nil {
				return err
			}
			results[i].Manifest = m
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: commit catalog: %w", err)
	}
	// Chunks of replaced recordings that the new copy did not overwrite.
	for _, old := range replaced {
		a.dropStaleChunks(old, results) // a no-op for a refused one
	}
	for _, p := range pend {
		p.blobs, p.evBlob = nil, nil
	}
	return results, nil
}

// ownIDTakenNote explains why a file that names recording id (held by the
// file whose hex sha256 is sha) was archived as derived instead.
func ownIDTakenNote(id uuid.UUID, sha string, derived uuid.UUID) string {
	return fmt.Sprintf("the file names recording %s, which holds other bytes (sha256 %.12s…); archived as %s", id, sha, derived)
}

// storedPolicy reads the retention policy inside tx (nil when none).
func storedPolicy(tx *bolt.Tx) (*Policy, error) {
	v := tx.Bucket(bucketSettings).Get(settingPolicy)
	if v == nil {
		return nil, nil
	}
	p := new(Policy)
	if err := json.Unmarshal(v, p); err != nil {
		return nil, fmt.Errorf("retention policy: %w", err)
	}
	return p, nil
}

// expired says why p is too old for the policy to keep, or "". Age counts
// from the recording's start, as Plan's does; a recording with no known
// start is as old as its ingest, so never expired.
func expired(policy *Policy, p *Pending, now time.Time) string {
	if policy == nil || policy.MaxAge <= 0 || !policy.inScope(p.format) || p.meta.Start.IsZero() {
		return ""
	}
	if age := now.Sub(p.meta.Start); age > policy.MaxAge {
		return fmt.Sprintf("older than the retention policy: started %s, %s ago, max age %s; not archived, as a prune would remove it",
			p.meta.Start.UTC().Format(time.RFC3339), age.Round(time.Second), policy.MaxAge)
	}
	return ""
}

// canReplace checks what the catalog alone can tell about growing
// recording p replacing old: same format, same session, not held, and at
// least as many chunks starting at the same ticks with the same lengths
// and checksums. checkPrefix then compares the bytes.
func canReplace(old *Manifest, p *Pending) error {
	refuse := func(format string, args ...any) error {
		return &ReplaceError{ID: old.ID, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case old.Hold != nil:
		return refuse("it is held (%s)", old.Hold.Reason)
	case old.Format != p.format:
		return refuse("it is a %s recording, the input is %s", old.Format, p.format)
	case old.Meta.Session != p.meta.Session:
		return refuse("it belongs to session %q, the input to %q", old.Meta.Session, p.meta.Session)
	case !p.keepSums:
		return refuse("the input was not split for replacing (Pending.MayReplace)")
	case len(p.chunks) < len(old.Chunks):
		return refuse("the archived copy has %d chunks, the input only %d", len(old.Chunks), len(p.chunks))
	}
	for i, c := range old.Chunks {
		n := p.chunks[i]
		if c.StartTick != n.StartTick || c.Length != n.Length || c.CRC != n.CRC {
			return refuse("chunk %d (tick %d) differs from the archived copy: the input does not extend it", i, c.StartTick)
		}
	}
	return nil
}

// checkPrefix reads back old's chunks and compares each with the sha256 p
// kept of its own chunk at the same place: a grown copy must begin with
// every byte of every archived chunk (CRC-32C alone is easy to forge).
func (a *Archive) checkPrefix(ctx context.Context, old *Manifest, p *Pending) error {
	if old == nil {
		return errors.New("archive: commit: replaced manifest missing")
	}
	rec, err := a.Open(old.ID)
	if err != nil {
		return fmt.Errorf("archive: read %s to compare: %w", old.ID, err)
	}
	for i := range old.Chunks {
		native, _, err := rec.ReadChunk(ctx, i)
		if err != nil {
			return fmt.Errorf("archive: read %s to compare: %w", old.ID, err)
		}
		if sha256.Sum256(native) != p.chunkSums[i] {
			return &ReplaceError{ID: old.ID, Reason: fmt.Sprintf("chunk %d (tick %d) differs from the archived copy: the input does not extend it", i, old.Chunks[i].StartTick)}
		}
	}
	return nil
}

// replacedOf returns the manifest in replaced with id.
func replacedOf(replaced []*Manifest, id uuid.UUID) *Manifest {
	for _, m := range replaced {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// dropUnwritten removes the chunks that pendings not written (duplicate,
// taken down, refused, expired) spilled ahead of the commit.
func (a *Archive) dropUnwritten(pend []*Pending, results []Result) {
	for i, p := range pend {
		if results[i].Outcome.writes() || !p.spilled {
			continue
		}
		if err := a.deleteChunks(p.shard, p.id); err == nil {
			p.spilled = false
		}
	}
}

// chunkOwner is the id the chunk keys are written under: the recording id,
// or for a spilled recording the provisional id its early chunks used.
func (p *Pending) chunkOwner(id uuid.UUID) uuid.UUID {
	if p.spilled {
		return p.id
	}
	return id
}

func (a *Archive) buildManifest(p *Pending, id uuid.UUID, now time.Time) (*Manifest, error) {
	meta := *p.meta
	meta.Events = nil
	m := &Manifest{
		ID: id, Format: p.format, Meta: meta,
		SHA256: hex.EncodeToString(p.sum), NativeBytes: p.size,
		HeaderBytes: int64(len(p.header)), TrailerBytes: int64(len(p.trailer)),
		Shard: p.shard, Ingested: now, SourceName: p.source,
		Chunks: p.chunks, EventCount: p.evCount,
	}
	if p.spilled && p.id != id {
		m.ChunkOwner = p.id
	}
	for _, c := range p.chunks {
		m.StoredBytes += c.Stored
	}
	return m, nil
}

// putRecording writes a manifest and everything that hangs off it.
func (a *Archive) putRecording(tx *bolt.Tx, m *Manifest, p *Pending) error {
	heads := a.encodeHeads(p.format, p.header, p.trailer)
	m.StoredBytes += int64(len(heads))
	if p.evCount > 0 {
		m.StoredBytes += int64(len(p.evBlob))
		if err := tx.Bucket(bucketEvents).Put(m.ID[:], p.evBlob); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketHeads).Put(m.ID[:], heads); err != nil {
		return err
	}
	if err := putManifest(tx, m); err != nil {
		return err
	}
	if err := putSource(tx, p.sum, m.NativeBytes, m.ID); err != nil {
		return err
	}
	if m.Meta.Session != "" {
		if err := tx.Bucket(bucketSessions).Put(sessionKey(m.Meta.Session, m.ID), nil); err != nil {
			return err
		}
	}
	return appendChange(tx, ChangePut, m.ID)
}

// removeCatalogEntries deletes a manifest and what hangs off it (not the
// chunks), without logging a change.
func removeCatalogEntries(tx *bolt.Tx, m *Manifest) error {
	sum, err := hex.DecodeString(m.SHA256)
	if err != nil {
		return fmt.Errorf("manifest %s: bad sha256: %w", m.ID, err)
	}
	for _, del := range []struct {
		bucket []byte
		key    []byte
	}{
		{bucketRecordings, m.ID[:]},
		{bucketHeads, m.ID[:]},
		{bucketSessions, sessionKey(m.Meta.Session, m.ID)},
	} {
		if err := tx.Bucket(del.bucket).Delete(del.key); err != nil {
			return err
		}
	}
	if err := deleteSource(tx, sum, m.NativeBytes); err != nil {
		return err
	}
	return deleteEvents(tx, m.ID)
}

// dropStaleChunks removes chunks of a replaced manifest that the new copy no
// longer references.
func (a *Archive) dropStaleChunks(old *Manifest, results []Result) {
	var cur *Manifest
	for _, r := range results {
		if r.Manifest != nil && r.Manifest.ID == old.ID {
			cur = r.Manifest
		}
	}
	if cur == nil {
		return
	}
	keep := map[string]bool{}
	if cur.Shard == old.Shard && cur.owner() == old.owner() {
		for _, c := range cur.Chunks {
			keep[string(chunkKey(cur.owner(), c.StartTick))] = true
		}
	}
	_ = a.updateShard(old.Shard, false, func(tx *bolt.Tx) error {
		s := chunksOf(tx)
		for _, c := range old.Chunks {
			k := chunkKey(old.owner(), c.StartTick)
			if !keep[string(k)] {
				if err := s.delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
