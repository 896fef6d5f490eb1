package archive

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats/all"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
	bolt "go.etcd.io/bbolt"
)

// smallGames ingests n short generated games on mapName, one commit each,
// and returns their ids and bytes.
func smallGames(t *testing.T, a *Archive, n int, seed uint64, mapName string) map[uuid.UUID][]byte {
	t.Helper()
	games := map[uuid.UUID][]byte{}
	for i := range n {
		game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 5 * time.Second, Players: 2, Seed: seed + uint64(i), MapName: mapName})
		games[ingestWith(t, a, all.ByName("teehistorian"), game, nil).ID] = game
	}
	return games
}

// headsDict returns the dictionary recording id's heads record names.
func headsDict(t *testing.T, a *Archive, id uuid.UUID) uint32 {
	t.Helper()
	var dict uint32
	err := a.catalog.View(func(tx *bolt.Tx) (err error) {
		dict, err = chunkenc.HeadsDictID(tx.Bucket(bucketHeads).Get(id[:]))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dict
}

// TestHeadsDictFirstIngest: the first firstTrain recordings of a format
// train its heads dictionary as they are committed; their heads and every
// later one's use it, they shrink, exports stay byte-identical, and an
// archive opened again reads them with the stored dictionary, which stats
// counts.
func TestHeadsDictFirstIngest(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, dir, Options{Columns: thColumnSet})
	ctx := context.Background()
	games := smallGames(t, a, firstTrain-1, 100, "")
	if d := a.Dicts(); len(d) != 0 {
		t.Fatalf("dictionaries %+v before %d recordings", d, firstTrain)
	}
	before := map[uuid.UUID]int64{}
	for id := range games {
		before[id] = manifest(t, a, id).StoredBytes
	}
	for id, g := range smallGames(t, a, 4, 200, "") {
		games[id] = g
	}
	dicts := a.Dicts()
	if len(dicts) != 1 || !dicts[0].Current || dicts[0].Format != "teehistorian" || dicts[0].Headers != firstTrain {
		t.Fatalf("dictionaries %+v: want teehistorian's, current, from %d recordings", dicts, firstTrain)
	}
	for id, native := range games {
		if got := headsDict(t, a, id); got != dicts[0].ID {
			t.Errorf("%s: heads use dictionary %d, want %d", id, got, dicts[0].ID)
		}
		if !bytes.Equal(export(t, a, id), native) {
			t.Errorf("%s: export differs", id)
		}
	}
	// The first firstTrain-1 recordings' heads were compressed again.
	var saved int64
	for id, n := range before {
		after := manifest(t, a, id).StoredBytes
		if after >= n {
			t.Errorf("%s: stored %d bytes before the dictionary, %d after", id, n, after)
		}
		saved += n - after
	}
	st, err := a.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.DictBytes != int64(dicts[0].Stored) || len(st.Dicts) != 1 {
		t.Errorf("stats count %d bytes of %d dictionaries, want %d of 1", st.DictBytes, len(st.Dicts), dicts[0].Stored)
	}
	t.Logf("the dictionary (%d bytes, %d stored) saved %d bytes on the first %d recordings' heads", dicts[0].Bytes, dicts[0].Stored, saved, len(before))
	chk, err := a.Check(ctx, CheckOptions{ReadData: true})
	if err != nil || !chk.OK() {
		t.Fatalf("check: %+v, %v", chk, err)
	}
	a.Close()

	b := openTest(t, dir, Options{Columns: thColumnSet})
	if got := b.Dicts(); len(got) != 1 || got[0] != dicts[0] {
		t.Fatalf("after reopening, dictionaries %+v, want %+v", got, dicts)
	}
	for id, native := range games {
		if !bytes.Equal(export(t, b, id), native) {
			t.Errorf("%s: export after reopening differs", id)
		}
	}
}

// TestHeadsDictFirstCommit: a commit that writes firstTrain or more
// recordings of a format without a dictionary trains it from their
// headers before it writes them, so their heads are written once, with
// it, and the stored bytes the commit reports are the archive's. A
// duplicate in the group is not offered to the training.
func TestHeadsDictFirstCommit(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	codec := all.ByName("teehistorian")
	var pend []*Pending
	var natives [][]byte
	for i := range 8 {
		game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 5 * time.Second, Players: 2, Seed: 400 + uint64(i)})
		natives = append(natives, game)
		pend = append(pend, finished(t, a, codec, game, nil))
	}
	pend = append(pend, finished(t, a, codec, natives[0], nil)) // a duplicate
	results, err := a.Commit(context.Background(), pend)
	if err != nil {
		t.Fatal(err)
	}
	dicts := a.Dicts()
	if len(dicts) != 1 || !dicts[0].Current || dicts[0].Headers != len(natives) {
		t.Fatalf("dictionaries %+v: want one, current, from the %d recordings written", dicts, len(natives))
	}
	for i, r := range results[:len(natives)] {
		if r.Outcome != Ingested {
			t.Fatalf("recording %d: %v", i, r.Outcome)
		}
		if got := headsDict(t, a, r.ID); got != dicts[0].ID {
			t.Errorf("%s: heads use dictionary %d, want %d", r.ID, got, dicts[0].ID)
		}
		// What the commit reported (ingest's stored bytes) is what the
		// archive holds: the heads were not written again after it.
		if got := manifest(t, a, r.ID).StoredBytes; got != r.Manifest.StoredBytes {
			t.Errorf("%s: the commit reported %d stored bytes, the archive holds %d", r.ID, r.Manifest.StoredBytes, got)
		}
		if !bytes.Equal(export(t, a, r.ID), natives[i]) {
			t.Errorf("%s: export differs", r.ID)
		}
	}
	if compacted, err := a.TidyCatalog(); err != nil || compacted {
		t.Errorf("the catalog was compacted after the first commit (%v, %v): its heads were written twice", compacted, err)
	}
}

// TestHeadsDictRetrain: recompress with Retrain makes a new current
// dictionary from the newest recordings (another server's), keeps the
// old one, and compresses every heads record again with the new one; a
// recording uploaded to the remote store carries heads any node decodes.
func TestHeadsDictRetrain(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	ctx := context.Background()
	games := smallGames(t, a, firstTrain, 300, "")
	first := a.Dicts()
	if len(first) != 1 {
		t.Fatalf("dictionaries %+v, want 1", first)
	}
	// Recordings of another map, a second later (training takes the
	// newest first).
	a.opts.Now = func() time.Time { return time.Now().Add(time.Second) }
	newer := smallGames(t, a, 3, 400, "Another Map")
	for id, g := range newer {
		games[id] = g
	}
	rep, err := a.Recompress(ctx, RecompressOptions{Retrain: true})
	if err != nil {
		t.Fatal(err)
	}
	dicts := a.Dicts()
	if len(rep.DictsTrained) != 1 || len(dicts) != 2 || rep.HeadsRewritten < len(newer) {
		t.Fatalf("trained %v, dictionaries %+v, heads rewritten %d: want a second teehistorian dictionary and at least the %d newest heads rewritten", rep.DictsTrained, dicts, rep.HeadsRewritten, len(newer))
	}
	var cur DictInfo
	for _, d := range dicts {
		if d.Current {
			cur = d
		}
	}
	if cur.ID == first[0].ID || cur.ID == 0 {
		t.Fatalf("current dictionary %+v, want a new one beside %+v", cur, first[0])
	}
	// A record is compressed again only where the new dictionary makes it
	// smaller: the others keep the old one, which stays readable.
	for id, native := range games {
		got := headsDict(t, a, id)
		if _, isNew := newer[id]; (isNew && got != cur.ID) || (got != cur.ID && got != first[0].ID) {
			t.Errorf("%s: heads use dictionary %d (new %d, old %d)", id, got, cur.ID, first[0].ID)
		}
		if !bytes.Equal(export(t, a, id), native) {
			t.Errorf("%s: export after the retrain differs", id)
		}
	}

	// The heads a remote manifest carries need no dictionary.
	var id uuid.UUID
	for id = range games {
		break
	}
	m := manifest(t, a, id)
	var rec []byte
	a.catalog.View(func(tx *bolt.Tx) error {
		rec = bytes.Clone(tx.Bucket(bucketHeads).Get(id[:]))
		return nil
	})
	portable, err := a.portableHeads(rec, m.HeaderBytes, m.TrailerBytes)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := zstd.NewReader(nil, chunkenc.DecoderOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := chunkenc.DecodeHeads(plain, portable, m.HeaderBytes, m.TrailerBytes)
	if err != nil || !bytes.HasPrefix(games[id], h) {
		t.Errorf("portable heads: %v", err)
	}
}

// TestHeadsDictDamaged: a dictionary record damaged on disk is left out
// when the archive opens, and a recording whose heads use it fails to
// export with an error that says so, instead of giving wrong bytes.
func TestHeadsDictDamaged(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, dir, Options{Columns: thColumnSet})
	games := smallGames(t, a, firstTrain, 500, "")
	dicts := a.Dicts()
	if len(dicts) != 1 {
		t.Fatalf("dictionaries %+v, want 1", dicts)
	}
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDicts)
		k := chunkenc.DictKey(dicts[0].ID)
		v := bytes.Clone(b.Get(k))
		v[len(v)/2] ^= 0xff
		return b.Put(k, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := openTest(t, dir, Options{Columns: thColumnSet})
	if d := b.Dicts(); len(d) != 0 {
		t.Errorf("dictionaries after the damage %+v, want none loaded", d)
	}
	chk, err := b.Check(context.Background(), CheckOptions{})
	if err != nil || chk.OK() || len(chk.Problems) == 0 || !strings.Contains(chk.Problems[0], "dictionary") {
		t.Errorf("check after the damage: %+v, %v; want a problem naming the dictionary", chk, err)
	}
	for id := range games {
		r, err := b.Open(id)
		if err == nil {
			_, err = r.WriteTo(context.Background(), &bytes.Buffer{})
		}
		if err == nil || !strings.Contains(err.Error(), "dictionary") {
			t.Fatalf("%s: export with its dictionary damaged: %v, want an error naming the dictionary", id, err)
		}
	}
}

// TestHeadsDictBarren: a format whose headers are too small for a
// dictionary gets none, and the commits stop collecting its recordings
// (a server's list would otherwise grow with every commit).
func TestHeadsDictBarren(t *testing.T) {
	a := openTest(t, "", Options{})
	for i := range 3 * firstTrain {
		ingestWith(t, a, formatstest.Lines{}, formatstest.LinesFile(fmt.Sprintf("barren %d", i), 10), nil)
	}
	if d := a.Dicts(); len(d) != 0 {
		t.Errorf("dictionaries %+v for headers of a few bytes", d)
	}
	a.dicts.mu.Lock()
	defer a.dicts.mu.Unlock()
	if n := len(a.dicts.early[formatstest.LinesName]); n != 0 || !a.dicts.barren[formatstest.LinesName] {
		t.Errorf("%d recordings still collected, barren %v: want none, and the format marked", n, a.dicts.barren)
	}
}

// TestHeadsDictGrows: a young dictionary is trained again from the
// commits each time their number doubles.
func TestHeadsDictGrows(t *testing.T) {
	a := openTest(t, "", Options{Columns: thColumnSet})
	games := smallGames(t, a, 2*firstTrain, 600, "")
	dicts := a.Dicts()
	var cur, old DictInfo
	for _, d := range dicts {
		if d.Current {
			cur = d
		} else {
			old = d
		}
	}
	if len(dicts) != 2 || cur.Headers != 2*firstTrain || old.Headers != firstTrain {
		t.Fatalf("dictionaries %+v: want one of %d recordings, current, beside one of %d", dicts, 2*firstTrain, firstTrain)
	}
	// A record is compressed again only where the new dictionary makes
	// it smaller.
	for id, native := range games {
		if got := headsDict(t, a, id); got != cur.ID && got != old.ID {
			t.Errorf("%s: heads use dictionary %d, want %d or %d", id, got, cur.ID, old.ID)
		}
		if !bytes.Equal(export(t, a, id), native) {
			t.Errorf("%s: export differs", id)
		}
	}
}
