package archive

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	bolt "go.etcd.io/bbolt"
)

// TestRecompress re-encodes a teehistorian recording (streams blobs) and a
// line recording (whole-chunk blobs): the stored bytes shrink, exports stay
// byte-identical, the manifest's sizes match the blobs (check is clean),
// and a second pass finds nothing to do.
func TestRecompress(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	ctx := context.Background()
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 5})
	th := ingestWith(t, a, all.ByName("teehistorian"), game, nil)
	lines := formatstest.LinesFile("recompress", 4000)
	ln := ingestWith(t, a, formatstest.Lines{}, lines, nil)
	want := map[uuid.UUID][]byte{th.ID: game, ln.ID: lines}
	before := map[uuid.UUID]int64{}
	for id := range want {
		before[id] = manifest(t, a, id).StoredBytes
	}

	var progress []RecompressProgress
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rep, err := a.Recompress(ctx, RecompressOptions{Now: now, Progress: func(p RecompressProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recordings != 2 || rep.Skipped != 0 || rep.AlreadyDone != 0 || len(progress) != 2 || progress[1].Done != 2 || progress[1].Total != 2 {
		t.Fatalf("report %+v, progress %+v: want 2 recordings done, 2 progress calls", rep, progress)
	}
	if rep.ChunksWritten == 0 || rep.StoredAfter >= rep.StoredBefore {
		t.Fatalf("stored %d -> %d bytes, %d chunks written: want fewer bytes", rep.StoredBefore, rep.StoredAfter, rep.ChunksWritten)
	}
	t.Logf("stored %d -> %d bytes, %d of %d chunks rewritten", rep.StoredBefore, rep.StoredAfter, rep.ChunksWritten, rep.Chunks)
	var sumBefore, sumAfter int64
	for id, native := range want {
		m := manifest(t, a, id)
		if !m.Recompressed.Equal(now) {
			t.Errorf("%s: Recompressed %v, want %v", id, m.Recompressed, now)
		}
		if got := export(t, a, id); !bytes.Equal(got, native) {
			t.Errorf("%s: export after recompress differs from the ingested bytes", id)
		}
		if got := storedInShard(t, a, m); got != sumChunks(m) {
			t.Errorf("%s: blobs in the shard hold %d bytes, the manifest's chunks %d", id, got, sumChunks(m))
		}
		sumBefore += before[id]
		sumAfter += m.StoredBytes
	}
	// The pass first trained teehistorian's heads dictionary and
	// compressed the heads again with it (dicts.go), before the chunks.
	if len(rep.DictsTrained) != 1 || rep.DictsTrained[0] != "teehistorian" || rep.HeadsRewritten != 1 || rep.HeadsSaved <= 0 {
		t.Errorf("dictionaries trained %v, heads rewritten %d saving %d: want teehistorian's, 1 record smaller", rep.DictsTrained, rep.HeadsRewritten, rep.HeadsSaved)
	}
	if sumBefore-rep.HeadsSaved != rep.StoredBefore || sumAfter != rep.StoredAfter {
		t.Errorf("report says %d -> %d after %d saved on heads, manifests %d -> %d", rep.StoredBefore, rep.StoredAfter, rep.HeadsSaved, sumBefore, sumAfter)
	}
	// Ingest already Huffman-codes the symbol columns alone (literals
	// frames); the best level still takes the rest over 1% further.
	if after := manifest(t, a, th.ID).StoredBytes; float64(after) > 0.99*float64(before[th.ID]) {
		t.Errorf("teehistorian stored %d -> %d: want at least 1%% smaller at the best level", before[th.ID], after)
	}
	chk, err := a.Check(ctx, CheckOptions{})
	if err != nil || !chk.OK() {
		t.Fatalf("check after recompress: %+v, %v", chk, err)
	}

	rep, err = a.Recompress(ctx, RecompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recordings != 0 || rep.AlreadyDone != 2 {
		t.Fatalf("second pass %+v: want nothing done, 2 already done", rep)
	}
}

// TestRecompressScope leaves young recordings alone and skips one deleted
// while the pass runs, writing nothing for it.
func TestRecompressScope(t *testing.T) {
	a := openTest(t, "", Options{})
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []uuid.UUID
	for i, age := range []time.Duration{0, 40 * 24 * time.Hour, 50 * 24 * time.Hour} {
		native := formatstest.LinesFile("scope"+string(rune('a'+i)), 2000)
		res := ingestWith(t, a, formatstest.Lines{}, native, func(m *formats.Metadata) { m.Start = start.Add(-age) })
		ids = append(ids, res.ID)
	}
	// 30 days: the first is too young. The pass takes the other two in
	// id order; whichever comes second is deleted when the first is done.
	var deleted uuid.UUID
	rep, err := a.Recompress(ctx, RecompressOptions{
		Now:       start,
		OlderThan: 30 * 24 * time.Hour,
		Progress: func(p RecompressProgress) {
			for _, id := range ids[1:] {
				if id != p.ID && deleted == uuid.Nil {
					deleted = id
					if _, err := a.Delete(ctx, id); err != nil {
						t.Error(err)
					}
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recordings != 1 || rep.Skipped != 1 {
		t.Fatalf("report %+v: want 1 recompressed, 1 skipped (deleted meanwhile)", rep)
	}
	if m := manifest(t, a, ids[0]); !m.Recompressed.IsZero() {
		t.Errorf("the young recording was recompressed")
	}
	if _, err := a.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	chk, err := a.Check(ctx, CheckOptions{})
	if err != nil || !chk.OK() {
		t.Fatalf("check: %+v, %v (orphans would mean the pass wrote blobs of the deleted recording)", chk, err)
	}
}

// TestCheckReportsResizedChunk: a chunk whose blob is not the size its
// manifest records (a recompress killed before its manifest update) is a
// problem check names.
func TestCheckReportsResizedChunk(t *testing.T) {
	a := openTest(t, "", Options{})
	res := ingest(t, a, formatstest.LinesFile("resized", 500), nil)
	m := manifest(t, a, res.ID)
	err := a.updateShard(m.Shard, false, func(tx *bolt.Tx) error {
		k := chunkKey(m.owner(), m.Chunks[0].StartTick)
		v := append([]byte(nil), tx.Bucket(bucketChunks).Get(k)...)
		return tx.Bucket(bucketChunks).Put(k, append(v, 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	chk, err := a.Check(context.Background(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if chk.OK() || len(chk.Problems) != 1 || !bytes.Contains([]byte(chk.Problems[0]), []byte("not the size the manifest records")) {
		t.Fatalf("check problems %q: want the resized chunk named", chk.Problems)
	}
}

func manifest(t *testing.T, a *Archive, id uuid.UUID) *Manifest {
	t.Helper()
	m, err := a.Manifest(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sumChunks(m *Manifest) int64 {
	var n int64
	for _, c := range m.Chunks {
		n += c.Stored
	}
	return n
}

// storedInShard sums the sizes of m's chunk blobs as the shard holds them.
func storedInShard(t *testing.T, a *Archive, m *Manifest) int64 {
	t.Helper()
	var n int64
	err := a.viewShard(m.Shard, func(tx *bolt.Tx) error {
		for _, c := range m.Chunks {
			n += int64(len(tx.Bucket(bucketChunks).Get(chunkKey(m.owner(), c.StartTick))))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecompressLeavesDamagedChunk: a chunk that does not decode to its
// checksum is reported and left byte for byte as it was; the recording's
// other chunks are still re-encoded.
func TestRecompressLeavesDamagedChunk(t *testing.T) {
	a := openTest(t, "", Options{})
	res := ingest(t, a, formatstest.LinesFile("damaged", 3000), nil)
	m := manifest(t, a, res.ID)
	if len(m.Chunks) < 3 {
		t.Fatalf("%d chunks, want at least 3", len(m.Chunks))
	}
	bad := m.Chunks[1]
	key := chunkKey(m.owner(), bad.StartTick)
	var damaged []byte
	err := a.updateShard(m.Shard, false, func(tx *bolt.Tx) error {
		damaged = append([]byte(nil), tx.Bucket(bucketChunks).Get(key)...)
		damaged[len(damaged)-5] ^= 0x40
		return tx.Bucket(bucketChunks).Put(key, damaged)
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Recompress(context.Background(), RecompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "chunk 1 (tick") || rep.Recordings != 1 {
		t.Fatalf("report %+v: want the damaged chunk 1 named, the recording done", rep)
	}
	err = a.viewShard(m.Shard, func(tx *bolt.Tx) error {
		if got := tx.Bucket(bucketChunks).Get(key); !bytes.Equal(got, damaged) {
			t.Errorf("the damaged blob changed: %d bytes, was %d", len(got), len(damaged))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := manifest(t, a, res.ID); after.Recompressed.IsZero() || after.Chunks[1].Stored != int64(len(damaged)) {
		t.Errorf("manifest after the pass: recompressed %v, damaged chunk's size %d (blob %d)", after.Recompressed, after.Chunks[1].Stored, len(damaged))
	}
}

// TestRecompressEvents encodes a recording's events again at the best
// level: the value shrinks, the events read back the same, the manifest
// counts the new size (check is clean), and a value whose JSON exceeds
// the limit is left as it is.
func TestRecompressEvents(t *testing.T) {
	a := openTest(t, "", Options{})
	ctx := context.Background()
	// Chat of a few players from a small vocabulary, in no simple order
	// (counting lines compress as well at the fastest level as at the
	// best).
	words := strings.Fields("gg nice wp lol where hook me pls finish unfreeze kill vote yes no spec afk brb thx sorry again")
	res := ingestWith(t, a, formatstest.Lines{}, formatstest.LinesFile("events", 500), func(m *formats.Metadata) {
		for i := range 4000 {
			m.Events = append(m.Events, formats.Event{Tick: int64(i * 37), Time: time.Duration(i) * 740 * time.Millisecond,
				Kind: formats.EventChat, Player: fmt.Sprintf("racer%d", i%9),
				Text: fmt.Sprintf("%s %s %d", words[i*7919%len(words)], words[i*104729/3%len(words)], i*31337%997)})
		}
	})
	want, err := a.Events(res.ID)
	if err != nil || len(want) < 4000 {
		t.Fatalf("events before: %d, %v", len(want), err)
	}
	before := eventsBytes(t, a, res.ID)

	var encs bestEncoders
	if vals, err := a.encodeEventsAgain(ctx, res.ID, &encs, 1000); err != nil || len(vals) != 0 {
		t.Fatalf("with a 1000-byte limit: %d values encoded again, %v; want none", len(vals), err)
	}

	stored := manifest(t, a, res.ID).StoredBytes
	rep, err := a.Recompress(ctx, RecompressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := eventsBytes(t, a, res.ID)
	if after >= before || rep.EventsSaved != before-after {
		t.Fatalf("events value %d -> %d bytes, report says %d saved", before, after, rep.EventsSaved)
	}
	t.Logf("events value %d -> %d bytes", before, after)
	m := manifest(t, a, res.ID)
	if saved := stored - m.StoredBytes; saved < rep.EventsSaved || rep.StoredAfter != m.StoredBytes {
		t.Errorf("manifest stored %d -> %d (report: after %d), events saved %d", stored, m.StoredBytes, rep.StoredAfter, rep.EventsSaved)
	}
	got, err := a.Events(res.ID)
	if err != nil || len(got) != len(want) {
		t.Fatalf("events after: %d, %v", len(got), err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d after recompress: %+v, want %+v", i, got[i], want[i])
		}
	}
	if chk, err := a.Check(ctx, CheckOptions{}); err != nil || !chk.OK() {
		t.Fatalf("check after recompress: %+v, %v", chk, err)
	}
}

// eventsBytes returns the bytes recording id's events values hold.
func eventsBytes(t *testing.T, a *Archive, id uuid.UUID) int64 {
	t.Helper()
	var n int64
	if err := a.catalog.View(func(tx *bolt.Tx) error { n = eventsStored(tx, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
