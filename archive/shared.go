// Shared chunk blobs: a shard keeps a blob once, however many recordings
// hold it. Files of one game written by different pipelines, or a file
// ingested again under another name with a new header, carry the same
// chunks byte for byte (two of the corpus's VTX samples share all eight).
//
// Sharing is the shard's own business: a manifest still records the size
// of its chunks' blobs, and a chunk key still finds its blob, through at
// most one reference. Every write and delete of bucketChunks goes through
// chunkStore, in the shard's own transaction, so the references and their
// counts change atomically with the blobs.
//
// Only a recording's first chunk is looked up by content. When it equals
// a chunk of another recording, that recording becomes its partner and
// each later chunk is compared with the partner's chunk at the same tick.
// That finds what copies of one game share at the cost of an index entry
// per recording, not per chunk (an entry per chunk took 0.7% of the
// stored bytes of 200 generated games, which share nothing).

package archive

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	bolt "go.etcd.io/bbolt"
)

var (
	// bucketContent: CRC-32C of a blob (4 B) ‖ its length (4 B) ‖ the
	// chunk key holding it (24 B) → nil, for the first chunk of each
	// recording when it is at least minSharedBlob bytes (or the shared
	// blob that chunk refers to): how a put finds an equal blob.
	bucketContent = []byte("content")
	// bucketRefs: shared key (24 B) ‖ referring chunk key (24 B) → nil:
	// who still uses a shared blob, so that the last delete removes it.
	bucketRefs = []byte("refs")
	// bucketPartners: chunk owner (16 B) → the owner (16 B) whose chunk
	// its first chunk equals; its later chunks are compared with that
	// owner's at the same tick.
	bucketPartners = []byte("partners")
)

const (
	// minSharedBlob is the smallest blob worth sharing: below it the
	// reference and the index entries cost about what sharing saves.
	minSharedBlob = 1 << 10
	// refBlobLen is the size of a reference: chunkenc.FlagRef ‖ shared key.
	refBlobLen = 1 + 24
)

// sharedOwner is the owner part of a shared blob's key (no recording has
// the nil uuid); the tick part is a sequence number of the shard.
var sharedOwner = uuid.Nil

// chunkStore is bucketChunks with sharing, inside one shard transaction.
type chunkStore struct {
	tx     *bolt.Tx
	chunks *bolt.Bucket
}

// chunksOf returns tx's chunk store. A shard without a chunks bucket has
// a store whose get and deletes find nothing and whose put refuses.
func chunksOf(tx *bolt.Tx) chunkStore {
	return chunkStore{tx: tx, chunks: tx.Bucket(bucketChunks)}
}

// refTarget returns the shared key a reference blob points to. A value
// that names any other key is no reference (a damaged shard): reading it
// fails on its flags, and deleting it touches no other chunk.
func refTarget(v []byte) ([]byte, bool) {
	if len(v) != refBlobLen || v[0] != chunkenc.FlagRef || !isSharedKey(v[1:]) {
		return nil, false
	}
	return v[1:], true
}

// isSharedKey reports whether a chunk key is a shared blob's.
func isSharedKey(k []byte) bool { return bytes.HasPrefix(k, sharedOwner[:]) }

// contentKey is the bucketContent key of blob stored under key.
func contentKey(blob, key []byte) []byte {
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint32(k, chunkenc.Checksum(blob))
	binary.BigEndian.PutUint32(k[4:], uint32(len(blob)))
	return append(k, key...)
}

// get returns the blob of key, following a reference; nil when the key
// holds nothing. A reference to a missing blob is an error (a damaged
// shard), not a missing chunk.
func (s chunkStore) get(key []byte) ([]byte, error) {
	if s.chunks == nil {
		return nil, nil
	}
	v := s.chunks.Get(key)
	target, ok := refTarget(v)
	if !ok {
		return v, nil
	}
	if v = s.chunks.Get(target); v == nil {
		return nil, fmt.Errorf("shared blob %x is missing", target)
	}
	if _, ok := refTarget(v); ok {
		return nil, fmt.Errorf("shared blob %x is itself a reference", target)
	}
	return v, nil
}

// put stores blob under key, replacing what key held. A blob equal to one
// already stored becomes a reference to it.
func (s chunkStore) put(key, blob []byte) error {
	if s.chunks == nil {
		return fmt.Errorf("archive: shard has no chunks bucket")
	}
	if err := s.delete(key); err != nil {
		return err
	}
	if len(blob) < minSharedBlob {
		return s.chunks.Put(key, blob)
	}
	owner := key[:16]
	if partners := s.tx.Bucket(bucketPartners); partners != nil {
		if p := partners.Get(owner); p != nil {
			if holder := s.holding(append(bytes.Clone(p), key[16:]...), blob); holder != nil {
				return s.share(holder, key)
			}
			return s.chunks.Put(key, blob)
		}
	}
	if k, _ := s.chunks.Cursor().Seek(owner); k != nil && bytes.HasPrefix(k, owner) && bytes.Compare(k, key) < 0 {
		return s.chunks.Put(key, blob) // not the recording's first chunk
	}
	content, err := s.tx.CreateBucketIfNotExists(bucketContent)
	if err != nil {
		return err
	}
	ck := contentKey(blob, key)
	prefix := ck[:8]
	c := content.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		holder := bytes.Clone(k[8:])
		if !bytes.Equal(s.chunks.Get(holder), blob) {
			continue // a CRC collision, or a stale entry
		}
		partner := holder[:16]
		if isSharedKey(holder) {
			if refs := s.tx.Bucket(bucketRefs); refs != nil {
				if r, _ := refs.Cursor().Seek(holder); len(r) == 2*len(holder) && bytes.HasPrefix(r, holder) {
					partner = bytes.Clone(r[24:40])
				}
			}
		}
		partners, err := s.tx.CreateBucketIfNotExists(bucketPartners)
		if err != nil {
			return err
		}
		if err := partners.Put(bytes.Clone(owner), partner); err != nil {
			return err
		}
		return s.share(holder, key)
	}
	if err := content.Put(ck, nil); err != nil {
		return err
	}
	return s.chunks.Put(key, blob)
}

// holding returns the key of the blob that key holds, itself or the shared
// blob it refers to, when that blob equals blob; nil otherwise.
func (s chunkStore) holding(key, blob []byte) []byte {
	v := s.chunks.Get(key)
	if target, ok := refTarget(v); ok {
		key, v = bytes.Clone(target), s.chunks.Get(target)
	}
	if v == nil || !bytes.Equal(v, blob) {
		return nil
	}
	return key
}

// share makes key refer to the blob holder has; a holder that is a
// recording's own chunk first moves its blob under a new shared key, with
// its content entry if it has one.
func (s chunkStore) share(holder, key []byte) error {
	refs, err := s.tx.CreateBucketIfNotExists(bucketRefs)
	if err != nil {
		return err
	}
	target := holder
	if !isSharedKey(holder) {
		for target = nil; target == nil || s.chunks.Get(target) != nil; {
			seq, err := s.chunks.NextSequence()
			if err != nil {
				return err
			}
			target = chunkKey(sharedOwner, int64(seq))
		}
		blob := bytes.Clone(s.chunks.Get(holder))
		if err := s.reindex(blob, holder, target); err != nil {
			return err
		}
		if err := s.chunks.Put(target, blob); err != nil {
			return err
		}
		if err := s.refer(refs, holder, target); err != nil {
			return err
		}
	}
	return s.refer(refs, key, target)
}

// reindex moves the content entry of blob from key from to key to, if
// there is one.
func (s chunkStore) reindex(blob, from, to []byte) error {
	content := s.tx.Bucket(bucketContent)
	if content == nil || len(blob) < minSharedBlob {
		return nil
	}
	old := contentKey(blob, from)
	if k, _ := content.Cursor().Seek(old); !bytes.Equal(k, old) {
		return nil // not indexed (Get cannot tell: the values are empty)
	}
	if err := content.Delete(old); err != nil {
		return err
	}
	return content.Put(contentKey(blob, to), nil)
}

// refer stores key as a reference to target and counts it.
func (s chunkStore) refer(refs *bolt.Bucket, key, target []byte) error {
	ref := make([]byte, 0, refBlobLen)
	ref = append(append(ref, chunkenc.FlagRef), target...)
	if err := s.chunks.Put(key, ref); err != nil {
		return err
	}
	return refs.Put(append(bytes.Clone(target), key...), nil)
}

// delete removes key; a shared blob goes with its last reference.
func (s chunkStore) delete(key []byte) error {
	if s.chunks == nil {
		return nil
	}
	v := s.chunks.Get(key)
	if v == nil {
		return nil
	}
	if target, ok := refTarget(v); ok {
		target = bytes.Clone(target)
		if err := s.unrefer(target, key); err != nil {
			return err
		}
	} else if err := s.unindex(v, key); err != nil {
		return err
	}
	return s.chunks.Delete(key)
}

// unrefer drops key's reference to target. A blob left with one chunk
// referring to it moves back under that chunk's key, and one left with
// none goes: a shared blob always has two chunks or more.
func (s chunkStore) unrefer(target, key []byte) error {
	refs := s.tx.Bucket(bucketRefs)
	if refs == nil {
		return nil
	}
	if err := refs.Delete(append(bytes.Clone(target), key...)); err != nil {
		return err
	}
	// The users left, two at most; an entry whose chunk does not refer to
	// target (a damaged count, see recount) is dropped, never trusted.
	var left, stale [][]byte
	c := refs.Cursor()
	for k, _ := c.Seek(target); k != nil && bytes.HasPrefix(k, target) && len(left) < 2; k, _ = c.Next() {
		if t, ok := refTarget(s.chunks.Get(k[len(target):])); ok && bytes.Equal(t, target) {
			left = append(left, bytes.Clone(k))
		} else {
			stale = append(stale, bytes.Clone(k))
		}
	}
	for _, k := range stale {
		if err := refs.Delete(k); err != nil {
			return err
		}
	}
	if len(left) > 1 {
		return nil // still shared
	}
	blob := bytes.Clone(s.chunks.Get(target))
	if len(left) == 0 || blob == nil {
		if blob != nil {
			if err := s.unindex(blob, target); err != nil {
				return err
			}
		}
		return s.chunks.Delete(target)
	}
	last := left[0][len(target):]
	if err := refs.Delete(left[0]); err != nil {
		return err
	}
	if err := s.reindex(blob, target, last); err != nil {
		return err
	}
	if err := s.chunks.Delete(target); err != nil {
		return err
	}
	return s.chunks.Put(last, blob)
}

// unindex removes the bucketContent entry of blob v under key.
func (s chunkStore) unindex(v, key []byte) error {
	if len(v) < minSharedBlob {
		return nil
	}
	content := s.tx.Bucket(bucketContent)
	if content == nil {
		return nil
	}
	return content.Delete(contentKey(v, key))
}

// deleteOwner removes every chunk of owner.
func (s chunkStore) deleteOwner(owner uuid.UUID) error {
	if owner == sharedOwner {
		return fmt.Errorf("archive: refusing to delete the shared blobs as one owner")
	}
	if s.chunks == nil {
		return nil
	}
	// A fresh seek after each delete: a delete may move or remove other
	// keys (a shared blob, its last user's), which a cursor would not see.
	for {
		k, v := s.chunks.Cursor().Seek(owner[:])
		if k == nil || !bytes.HasPrefix(k, owner[:]) {
			break
		}
		if v == nil {
			// A nested bucket, which delete would leave: the loop
			// would meet it again forever.
			return fmt.Errorf("archive: chunk key %x holds a bucket (a damaged shard)", k)
		}
		if err := s.delete(bytes.Clone(k)); err != nil {
			return err
		}
	}
	if partners := s.tx.Bucket(bucketPartners); partners != nil {
		return partners.Delete(owner[:])
	}
	return nil
}

// sharedSaving calls saved for each chunk that refers to a shared blob
// in the shard of tx, with what its recording saves by sharing: the first
// chunk referring to a blob holds it (and pays for its reference), every
// other one saves the blob less its reference. With two chunks or more to
// each blob the sum is positive.
func sharedSaving(tx *bolt.Tx, saved func(owner uuid.UUID, n int64)) {
	refs, chunks := tx.Bucket(bucketRefs), tx.Bucket(bucketChunks)
	if refs == nil || chunks == nil {
		return
	}
	var cur []byte
	var size int64
	c := refs.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) != 48 {
			continue
		}
		owner := uuid.UUID(k[24:40])
		if !bytes.Equal(k[:24], cur) {
			cur, size = bytes.Clone(k[:24]), int64(len(chunks.Get(k[:24])))
			saved(owner, -refBlobLen)
			continue
		}
		saved(owner, size-refBlobLen)
	}
}

// recount compares the reference entries of the shard of tx with the
// references its chunks hold and returns how many differ: a missing entry
// would let a delete remove a blob still in use, an extra one keeps a blob
// forever. With repair (tx writable) it makes the entries match.
func recount(tx *bolt.Tx, repair bool) (int, error) {
	chunks := tx.Bucket(bucketChunks)
	if chunks == nil {
		return 0, nil
	}
	want := map[string]bool{}
	err := chunks.ForEach(func(k, v []byte) error {
		if target, ok := refTarget(v); ok {
			want[string(target)+string(k)] = true
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	extra, err := keyDiff(tx.Bucket(bucketRefs), want)
	if err != nil {
		return 0, err
	}
	n := len(want) + len(extra)
	if !repair || n == 0 {
		return n, nil
	}
	refs, err := tx.CreateBucketIfNotExists(bucketRefs)
	if err != nil {
		return n, err
	}
	return n, applyKeyDiff(refs, want, extra)
}
