package archive

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats/formatstest"
	bolt "go.etcd.io/bbolt"
)

// sharedLines is a toy recording of session whose lines are the first n
// of a fixed random sequence, long and random enough that each chunk's
// blob is above minSharedBlob.
func sharedLines(session string, n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	fmt.Fprintf(&b, "LINES %s\n", session)
	raw := make([]byte, 450)
	for i := range n {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		fmt.Fprintf(&b, "%d %s\n", i+1, base64.StdEncoding.EncodeToString(raw))
	}
	return b.Bytes()
}

// TestSharedBlobs ingests recordings whose chunks are equal byte for byte
// under different headers: the shard keeps each blob once, every recording
// exports as it was ingested, check passes, stats count the saving, and
// deleting them one by one leaves the shared blobs exactly as long as some
// recording uses them.
func TestSharedBlobs(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	files := map[string][]byte{
		"a": sharedLines("a", 40), // 10 chunks
		"b": sharedLines("b", 40), // the same 10
		"c": sharedLines("c", 22), // the first 5, and a 6th of two lines below minSharedBlob
	}
	ids := map[string]uuid.UUID{}
	var logical int64
	for _, name := range []string{"a", "b", "c"} {
		res := ingest(t, a, files[name], nil)
		ids[name] = res.ID
		logical += res.Manifest.StoredBytes
	}
	m, err := a.Manifest(ids["a"])
	if err != nil {
		t.Fatal(err)
	}
	// Each of the 10 shared blobs is held once and saved by the other
	// chunks that hold it: b's 10 and c's first 5.
	var want int64
	for i, c := range m.Chunks {
		if c.Stored < minSharedBlob {
			t.Fatalf("test chunk %d is %d B, below minSharedBlob", i, c.Stored)
		}
		want += c.Stored
		if i < 5 {
			want += c.Stored
		}
	}
	want -= 25 * refBlobLen

	verify := func(live ...string) {
		t.Helper()
		for _, name := range live {
			if got := export(t, a, ids[name]); !bytes.Equal(got, files[name]) {
				t.Errorf("%s: export differs from its file", name)
			}
		}
		rep, err := a.Check(ctx, CheckOptions{ReadData: true})
		if err != nil || !rep.OK() || rep.Orphans != 0 {
			t.Fatalf("check: %+v, %v", rep, err)
		}
	}
	verify("a", "b", "c")
	st, err := a.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.SharedBytes != want || st.StoredBytes != logical-want || st.Formats[formatstest.LinesName].StoredBytes != st.StoredBytes {
		t.Errorf("stats: shared %d, stored %d (logical %d), want shared %d", st.SharedBytes, st.StoredBytes, logical, want)
	}
	if n := countShard(t, a, m.Shard); n != (shardCounts{chunks: 25 + 1 + 10, shared: 10, refs: 25, content: 1}) {
		t.Errorf("shard after ingest: %+v", n)
	}

	for i, name := range []string{"a", "c", "b"} {
		if _, err := a.Delete(ctx, ids[name]); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			verify("b", "c")
			// b's first 5 blobs are c's too; its last 5 move back.
			if n := countShard(t, a, m.Shard); n != (shardCounts{chunks: 10 + 6 + 5, shared: 5, refs: 10, content: 1}) {
				t.Errorf("shard after deleting a: %+v", n)
			}
		case 1:
			verify("b")
			// b alone holds the blobs: they move back under its keys.
			if n := countShard(t, a, m.Shard); n != (shardCounts{chunks: 10, content: 1}) {
				t.Errorf("shard after deleting c: %+v", n)
			}
		case 2:
			verify()
			if n := countShard(t, a, m.Shard); n != (shardCounts{}) {
				t.Errorf("shard after deleting all: %+v", n)
			}
		}
	}
}

// TestSharedBlobsRecompress: a recompress pass re-encodes each recording's
// chunks; equal re-encoded blobs are shared again and exports stay exact.
func TestSharedBlobsRecompress(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	x, y := sharedLines("x", 40), sharedLines("y", 40)
	rx, ry := ingest(t, a, x, nil), ingest(t, a, y, nil)
	if _, err := a.Recompress(ctx, RecompressOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(export(t, a, rx.ID), x) || !bytes.Equal(export(t, a, ry.ID), y) {
		t.Fatal("export after recompress differs")
	}
	rep, err := a.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Orphans != 0 {
		t.Fatalf("check: %+v, %v", rep, err)
	}
	if n := countShard(t, a, rx.Manifest.Shard); n.shared != 10 || n.refs != 20 {
		t.Errorf("shard after recompress: %+v, want 10 shared blobs and 20 references", n)
	}
}

// TestRecompressKeepsSharing: recordings sharing chunks that the best
// level would shrink keep sharing them after a recompress pass (encoding a
// shared chunk again gave one recording blobs of its own beside the shared
// ones), and the chunks they do not share are still re-encoded.
func TestRecompressKeepsSharing(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	// Chunks of four lines of 300 words from 300: over minSharedBlob
	// stored, and with repeats that the best level codes a little better.
	vocab := rand.New(rand.NewPCG(5, 5))
	var words []string
	for range 300 {
		w := make([]byte, 4+vocab.IntN(5))
		for i := range w {
			w[i] = byte('a' + vocab.IntN(26))
		}
		words = append(words, string(w))
	}
	text := func(seed uint64, from, n int) []byte {
		rng := rand.New(rand.NewPCG(seed, 9))
		var b bytes.Buffer
		for i := range n {
			fmt.Fprintf(&b, "%d", from+i+1)
			for range 300 {
				b.WriteString(" " + words[rng.IntN(len(words))])
			}
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	body := text(1, 0, 60)
	x := append([]byte("LINES x\n"), body...)
	y := append(append([]byte("LINES y\n"), body...), text(2, 60, 30)...)
	rx, ry := ingest(t, a, x, nil), ingest(t, a, y, nil)
	before := countShard(t, a, rx.Manifest.Shard)
	if before.shared == 0 {
		t.Fatalf("nothing shared after ingest: %+v", before)
	}
	rep, err := a.Recompress(ctx, RecompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ChunksWritten == 0 {
		t.Error("no chunk re-encoded: y's own chunks should have shrunk")
	}
	if after := countShard(t, a, rx.Manifest.Shard); after.shared != before.shared || after.refs != before.refs {
		t.Errorf("shard after recompress: %+v, before %+v", after, before)
	}
	if !bytes.Equal(export(t, a, rx.ID), x) || !bytes.Equal(export(t, a, ry.ID), y) {
		t.Fatal("export after recompress differs")
	}
	if chk, err := a.Check(ctx, CheckOptions{ReadData: true}); err != nil || !chk.OK() {
		t.Fatalf("check: %+v, %v", chk, err)
	}
}

// TestCheckRepairsUnusedSharedBlob: a shared blob nothing refers to (as a
// damaged shard could hold) is an orphan that --repair removes.
func TestCheckRepairsUnusedSharedBlob(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	res := ingest(t, a, sharedLines("a", 8), nil)
	err := a.updateShard(res.Manifest.Shard, false, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketChunks).Put(chunkKey(sharedOwner, 99), bytes.Repeat([]byte{1}, 2000))
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Check(ctx, CheckOptions{Repair: true})
	if err != nil || rep.Orphans != 1 || rep.OrphanBytes != 2000 {
		t.Fatalf("check --repair: %+v, %v", rep, err)
	}
	if rep, err = a.Check(ctx, CheckOptions{ReadData: true}); err != nil || !rep.OK() || rep.Orphans != 0 {
		t.Fatalf("check after repair: %+v, %v", rep, err)
	}
}

// TestChunkStoreModel runs random puts and deletes of a few contents
// against a map and checks after each step that every key reads back what
// was put and that the references, their counts and the content entries
// are exact. A second owner that puts the same contents in the same order
// as the first shares every large one.
func TestChunkStoreModel(t *testing.T) {
	db := openChunkDB(t)
	contents := [][]byte{
		bytes.Repeat([]byte("a"), 2000),
		bytes.Repeat([]byte("b"), 2000),
		bytes.Repeat([]byte("c"), 3000),
		[]byte("small, never shared"),
	}
	owners := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	model := map[string][]byte{}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 3000 {
		op := chunkOp{owner: owners[rng.IntN(len(owners))], tick: int64(rng.IntN(4)), content: contents[rng.IntN(len(contents))]}
		switch n := rng.IntN(10); {
		case n < 6:
			op.kind = opPut
		case n < 9:
			op.kind = opDelete
		default:
			op.kind = opDeleteOwner
		}
		if err := applyChunkOp(db, model, op); err != nil {
			t.Fatalf("step %d (%+v): %v", step, op.kind, err)
		}
	}

	// Two fresh owners, the same new chunks in the same order: every large
	// blob of the second is the first's.
	for i, c := range contents {
		contents[i] = bytes.ToUpper(c)
	}
	x, y := uuid.New(), uuid.New()
	for _, o := range []uuid.UUID{x, y} {
		for i, c := range contents {
			if err := applyChunkOp(db, model, chunkOp{kind: opPut, owner: o, tick: int64(100 + i), content: c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := db.View(func(tx *bolt.Tx) error {
		for i, c := range contents {
			_, ref := refTarget(tx.Bucket(bucketChunks).Get(chunkKey(y, int64(100+i))))
			if ref != (len(c) >= minSharedBlob) {
				return fmt.Errorf("chunk %d (%d B) of the copy: shared %v", i, len(c), ref)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkChunkStore compares a shard's chunks with model and checks the
// sharing's bookkeeping.
func checkChunkStore(tx *bolt.Tx, model map[string][]byte) error {
	s := chunksOf(tx)
	for k, want := range model {
		got, err := s.get([]byte(k))
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("key %x: got %d bytes (%v), want %d", k, len(got), err, len(want))
		}
	}
	refsWant := map[string]bool{}
	err := s.chunks.ForEach(func(k, v []byte) error {
		if target, ok := refTarget(v); ok {
			refsWant[string(target)+string(k)] = true
			return nil
		}
		if !isSharedKey(k) && model[string(k)] == nil {
			return fmt.Errorf("key %x is stored but was deleted", k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var refsGot []string
	if b := tx.Bucket(bucketRefs); b != nil {
		b.ForEach(func(k, _ []byte) error { refsGot = append(refsGot, string(k)); return nil })
	}
	if len(refsGot) != len(refsWant) {
		return fmt.Errorf("%d reference entries, %d references", len(refsGot), len(refsWant))
	}
	for _, k := range refsGot {
		if !refsWant[k] {
			return fmt.Errorf("reference entry %x has no reference", k)
		}
	}
	if b := tx.Bucket(bucketContent); b != nil {
		err := b.ForEach(func(k, _ []byte) error {
			v := s.chunks.Get(k[8:])
			if _, ref := refTarget(v); v == nil || ref || !bytes.Equal(contentKey(v, k[8:]), k) {
				return fmt.Errorf("content entry %x names no blob of that content", k)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	users := map[string]int{}
	for _, v := range refsGot {
		if shared := tx.Bucket(bucketChunks).Get([]byte(v[:24])); shared == nil {
			return fmt.Errorf("reference to missing %x", v[:24])
		}
		users[v[:24]]++
	}
	for k, n := range users {
		if n < 2 {
			return fmt.Errorf("shared blob %x has %d users, want 2 or more", k, n)
		}
	}
	var shared int
	s.chunks.ForEach(func(k, _ []byte) error {
		if isSharedKey(k) {
			shared++
		}
		return nil
	})
	if shared != len(users) {
		return fmt.Errorf("%d shared blobs, %d in use", shared, len(users))
	}
	return nil
}

// shardCounts counts a shard's keys by kind.
type shardCounts struct{ chunks, shared, refs, content int }

func countShard(t *testing.T, a *Archive, shard string) shardCounts {
	t.Helper()
	var n shardCounts
	err := a.viewShard(shard, func(tx *bolt.Tx) error {
		tx.Bucket(bucketChunks).ForEach(func(k, _ []byte) error {
			n.chunks++
			if isSharedKey(k) {
				n.shared++
			}
			return nil
		})
		if b := tx.Bucket(bucketRefs); b != nil {
			n.refs = b.Stats().KeyN
		}
		if b := tx.Bucket(bucketContent); b != nil {
			n.content = b.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCheckRecountsReferences: a lost reference entry (a delete would then
// remove a blob still in use) and an extra one are reported, and --repair
// rebuilds the entries from the chunks, after which deleting one user
// leaves the other readable.
func TestCheckRecountsReferences(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	x, y := sharedLines("x", 8), sharedLines("y", 8)
	rx, ry := ingest(t, a, x, nil), ingest(t, a, y, nil)
	shard := rx.Manifest.Shard
	err := a.updateShard(shard, false, func(tx *bolt.Tx) error {
		refs := tx.Bucket(bucketRefs)
		k, _ := refs.Cursor().First()
		if k == nil {
			return fmt.Errorf("no reference entries")
		}
		if err := refs.Delete(bytes.Clone(k)); err != nil {
			return err
		}
		return refs.Put(append(chunkKey(sharedOwner, 77), chunkKey(uuid.New(), 1)...), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Check(ctx, CheckOptions{})
	if err != nil || rep.OK() || rep.Miscounted != 2 {
		t.Fatalf("check: %+v, %v; want 2 miscounted references", rep, err)
	}
	if rep, err = a.Check(ctx, CheckOptions{Repair: true}); err != nil || rep.Miscounted != 2 {
		t.Fatalf("check --repair: %+v, %v", rep, err)
	}
	if rep, err = a.Check(ctx, CheckOptions{ReadData: true}); err != nil || !rep.OK() {
		t.Fatalf("check after repair: %+v, %v", rep, err)
	}
	if _, err := a.Delete(ctx, rx.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(export(t, a, ry.ID), y) {
		t.Fatal("the other user of the shared blobs lost them")
	}
	if n := countShard(t, a, shard); n.shared != 0 || n.refs != 0 {
		t.Errorf("shard after the delete: %+v, want no shared blobs", n)
	}
}

// FuzzChunkStore runs the operations its input spells (two bytes each: the
// operation and the key, the content) against a model, as
// TestChunkStoreModel does with random ones, and checks the store after
// each.
func FuzzChunkStore(f *testing.F) {
	f.Add([]byte{0, 0x00, 0, 0x10, 1, 0x00, 0, 0x20, 2, 0x10})
	f.Add([]byte{0, 0x01, 0, 0x11, 0, 0x21, 1, 0x01, 1, 0x11, 0, 0x01})
	f.Add([]byte{0, 0x02, 0, 0x12, 0, 0x03, 0, 0x13, 2, 0x00, 1, 0x12})
	contents := [][]byte{
		bytes.Repeat([]byte("a"), 2000),
		bytes.Repeat([]byte("b"), 1500),
		[]byte("small"),
	}
	owners := []uuid.UUID{{1}, {2}, {3}, {4}}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			return
		}
		db := openChunkDB(t)
		model := map[string][]byte{}
		for i := 0; i+1 < len(ops); i += 2 {
			arg := ops[i+1]
			op := chunkOp{
				kind: int(ops[i] % 3), owner: owners[arg>>4&3], tick: int64(arg & 3),
				content: contents[int(arg>>2&3)%len(contents)],
			}
			if err := applyChunkOp(db, model, op); err != nil {
				t.Fatalf("op %d (%d %#x): %v", i/2, op.kind, arg, err)
			}
		}
	})
}

// TestUnreferDropsStaleEntries: with a damaged count naming a chunk that
// holds a blob of its own, the last delete of a real user must not move
// the shared blob over that chunk.
func TestUnreferDropsStaleEntries(t *testing.T) {
	db := openChunkDB(t)
	shared, own := bytes.Repeat([]byte("s"), 2000), bytes.Repeat([]byte("o"), 2000)
	a, b, c := chunkKey(uuid.UUID{1}, 0), chunkKey(uuid.UUID{2}, 0), chunkKey(uuid.UUID{3}, 0)
	err := db.Update(func(tx *bolt.Tx) error {
		s := chunksOf(tx)
		for _, p := range []struct{ k, v []byte }{{a, shared}, {b, shared}, {c, own}} {
			if err := s.put(p.k, p.v); err != nil {
				return err
			}
		}
		target, ok := refTarget(s.chunks.Get(a))
		if !ok {
			return fmt.Errorf("a does not refer to a shared blob")
		}
		// The damage: c counted as a user of a's blob.
		if err := tx.Bucket(bucketRefs).Put(append(bytes.Clone(target), c...), nil); err != nil {
			return err
		}
		return s.delete(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		return checkChunkStore(tx, map[string][]byte{string(b): shared, string(c): own})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openChunkDB opens a bbolt file with an empty chunks bucket, for tests of
// chunkStore alone.
func openChunkDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket(bucketChunks)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

// Kinds of chunkOp.
const (
	opPut = iota
	opDelete
	opDeleteOwner
)

// chunkOp is one step of the model tests: put content under owner and
// tick, delete that key, or delete all of owner's keys.
type chunkOp struct {
	kind    int
	owner   uuid.UUID
	tick    int64
	content []byte
}

// applyChunkOp applies op to the chunk store in db and to model, then
// checks the store against model (checkChunkStore).
func applyChunkOp(db *bolt.DB, model map[string][]byte, op chunkOp) error {
	key := chunkKey(op.owner, op.tick)
	err := db.Update(func(tx *bolt.Tx) error {
		s := chunksOf(tx)
		switch op.kind {
		case opPut:
			model[string(key)] = op.content
			return s.put(key, op.content)
		case opDelete:
			delete(model, string(key))
			return s.delete(key)
		default:
			for k := range model {
				if bytes.HasPrefix([]byte(k), op.owner[:]) {
					delete(model, k)
				}
			}
			return s.deleteOwner(op.owner)
		}
	})
	if err != nil {
		return err
	}
	return db.View(func(tx *bolt.Tx) error { return checkChunkStore(tx, model) })
}

// TestDamagedReferences: a reference naming another recording's chunk
// instead of a shared blob is no reference (deleting it leaves that chunk
// alone, reading it fails on its flags), and a bucket among a recording's
// chunks makes deleteOwner fail instead of loop.
func TestDamagedReferences(t *testing.T) {
	db := openChunkDB(t)
	blob := bytes.Repeat([]byte("x"), 2000)
	x, y, z := chunkKey(uuid.UUID{1}, 0), chunkKey(uuid.UUID{2}, 0), chunkKey(uuid.UUID{3}, 0)
	err := db.Update(func(tx *bolt.Tx) error {
		s := chunksOf(tx)
		if err := s.put(x, blob); err != nil {
			return err
		}
		if err := s.chunks.Put(y, append([]byte{chunkenc.FlagRef}, x...)); err != nil {
			return err
		}
		if v, err := s.get(y); err != nil || v[0] != chunkenc.FlagRef {
			return fmt.Errorf("get of the damaged reference: %d bytes starting %#x, %v; want its own 25 bytes", len(v), v[:1], err)
		}
		if err := s.deleteOwner(uuid.UUID{2}); err != nil {
			return err
		}
		if !bytes.Equal(s.chunks.Get(x), blob) {
			return fmt.Errorf("deleting the damaged reference removed the chunk it named")
		}
		if _, err := s.chunks.CreateBucket(z); err != nil {
			return err
		}
		if err := s.deleteOwner(uuid.UUID{3}); err == nil {
			return fmt.Errorf("deleteOwner over a bucket: no error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
