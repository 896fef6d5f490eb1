// The archive's zstd dictionaries of recordings' headers.
//
// Small recordings are mostly header: a real DDNet file of 3–20 KB has a
// 3.2 KB header, which on its own compresses to 1.2 KB, while the headers
// of one game server differ in a few fields. So each format gets a
// dictionary of headers it has archived (chunkenc.HeadsTrainer chooses
// them), and a new recording's header is compressed against it: after
// recompress the heads records of the corpus's six real DDNet files take
// 548 bytes instead of 7,636.
//
// A format's first dictionaries are trained by the commits (firstDicts
// before a commit that brings 4 or more at once, learnHeads after one
// that brings the 4th; again as their number doubles), later ones by
// the background pass (Recompress). They are kept forever: a heads record
// names its dictionary's id, so every record written with an older
// dictionary stays readable, and a dictionary's content is a few KB to
// chunkenc.MaxDictBytes. A recording
// leaves the archive (the remote store, another node) with its heads
// compressed without a dictionary.

package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	bolt "go.etcd.io/bbolt"
)

// dictionaries is an archive's set of heads dictionaries and what uses
// them.
type dictionaries struct {
	mu      sync.Mutex
	byID    map[uint32]chunkenc.Dict
	current map[string]uint32        // format → the dictionary new heads use
	encs    map[uint32]*zstd.Encoder // heads encoders of current dictionaries, made on first use
	early   map[string][]headsRef    // recordings of formats whose dictionary is missing or young, committed by this process (learnHeads)
	barren  map[string]bool          // formats whose headers made no dictionary in this process (learnHeads)
	damaged []string                 // stored dictionaries that did not load, for Check
	// dec decodes blobs and heads records; it knows every dictionary.
	// Replaced (not changed: decoders are in use) when one is added; the
	// replaced ones are closed with the archive.
	dec     atomic.Pointer[zstd.Decoder]
	retired []*zstd.Decoder
}

// decoder returns the decoder of blobs and heads records.
func (a *Archive) decoder() *zstd.Decoder { return a.dicts.dec.Load() }

// loadDicts reads the stored dictionaries and makes the decoder that knows
// them. A damaged dictionary is left out: the heads records that use it
// fail to decode, naming it, and Check reports it.
func (a *Archive) loadDicts() error {
	d := &a.dicts
	d.byID, d.current, d.encs = map[uint32]chunkenc.Dict{}, map[string]uint32{}, map[uint32]*zstd.Encoder{}
	err := a.catalog.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketDicts); b != nil {
			if err := b.ForEach(func(k, v []byte) error {
				dict, err := chunkenc.DecodeDict(k, v)
				if err != nil {
					d.damaged = append(d.damaged, err.Error())
					return nil
				}
				d.byID[dict.ID] = dict
				return nil
			}); err != nil {
				return err
			}
		}
		if b := tx.Bucket(bucketDictUse); b != nil {
			return b.ForEach(func(k, v []byte) error {
				if id := dictUseID(v); id != 0 {
					if _, ok := d.byID[id]; ok {
						d.current[string(k)] = id
					}
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("archive: dictionaries: %w", err)
	}
	dec, err := newDecoder(d.byID)
	if err != nil {
		return fmt.Errorf("archive: dictionaries: %w", err)
	}
	d.dec.Store(dec)
	return nil
}

// newDecoder returns a decoder of blobs and heads records that knows dicts.
func newDecoder(dicts map[uint32]chunkenc.Dict) (*zstd.Decoder, error) {
	opts := chunkenc.DecoderOptions()
	for id, d := range dicts {
		opts = append(opts, zstd.WithDecoderDictRaw(id, d.Content))
	}
	return zstd.NewReader(nil, opts...)
}

// dictUseID reads a bucketDictUse value.
func dictUseID(v []byte) uint32 {
	if len(v) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

// close closes the decoders; called by Close.
func (d *dictionaries) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dec := range d.retired {
		dec.Close()
	}
	d.retired = nil
	if dec := d.dec.Load(); dec != nil {
		dec.Close()
	}
}

// headsEncoder returns the encoder of a new heads record of format: one
// with the format's dictionary when it has one, else the archive's.
func (a *Archive) headsEncoder(format string) *zstd.Encoder {
	d := &a.dicts
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.current[format]
	if !ok {
		return a.enc
	}
	if e := d.encs[id]; e != nil {
		return e
	}
	e, err := zstd.NewWriter(nil, chunkenc.HeadsEncoderOptions(d.byID[id].Content)...)
	if err != nil {
		return a.enc // cannot happen with a dictionary that loaded; the plain encoder is always right
	}
	d.encs[id] = e
	return e
}

// encodeHeads returns the heads record of a recording of format.
func (a *Archive) encodeHeads(format string, header, trailer []byte) []byte {
	return chunkenc.EncodeHeads(a.headsEncoder(format), header, trailer)
}

// portableHeads returns a heads record that needs no dictionary: rec as
// it is, or its header and trailer compressed again without one, for a
// copy that leaves the archive (the remote store).
func (a *Archive) portableHeads(rec []byte, headerLen, trailerLen int64) ([]byte, error) {
	if len(rec) == 0 {
		return rec, nil
	}
	id, err := chunkenc.HeadsDictID(rec)
	if err != nil || id == 0 {
		return rec, err
	}
	h, t, err := chunkenc.DecodeHeads(a.decoder(), rec, headerLen, trailerLen)
	if err != nil {
		return nil, err
	}
	return chunkenc.EncodeHeads(a.enc, h, t), nil
}

// addDict stores a trained dictionary and makes it the one new heads of
// its format use. The dictionary is in the catalog before any record can
// name it, and in the decoder before any encoder uses it.
func (a *Archive) addDict(dict chunkenc.Dict) error {
	rec := chunkenc.EncodeDict(a.enc, dict)
	dict.Stored = len(rec)
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketDicts)
		if err != nil {
			return err
		}
		if err := b.Put(chunkenc.DictKey(dict.ID), rec); err != nil {
			return err
		}
		u, err := tx.CreateBucketIfNotExists(bucketDictUse)
		if err != nil {
			return err
		}
		if err := u.Put([]byte(dict.Format), chunkenc.DictKey(dict.ID)); err != nil {
			return err
		}
		return tx.Bucket(bucketSettings).Put(settingHeadsRewrite, []byte("1"))
	})
	if err != nil {
		return fmt.Errorf("archive: store dictionary: %w", err)
	}
	d := &a.dicts
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.byID[dict.ID]; !ok {
		all := make(map[uint32]chunkenc.Dict, len(d.byID)+1)
		for id, x := range d.byID {
			all[id] = x
		}
		all[dict.ID] = dict
		dec, err := newDecoder(all)
		if err != nil {
			return fmt.Errorf("archive: dictionary %d: %w", dict.ID, err)
		}
		d.byID = all
		d.retired = append(d.retired, d.dec.Swap(dec))
	}
	d.current[dict.Format] = dict.ID
	for id := range d.encs {
		if id != dict.ID {
			delete(d.encs, id) // an encoder still in use is the collector's once done
		}
	}
	return nil
}

// DictInfo describes one stored dictionary (Archive.Dicts).
type DictInfo struct {
	ID      uint32    `json:"id"`
	Format  string    `json:"format"`
	Created time.Time `json:"created"`
	Headers int       `json:"headers"`
	Bytes   int       `json:"bytes"`   // content
	Stored  int       `json:"stored"`  // the stored record, compressed
	Current bool      `json:"current"` // new heads of its format use it
}

// Dicts lists the stored dictionaries, by format, newest first.
func (a *Archive) Dicts() []DictInfo {
	d := &a.dicts
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]DictInfo, 0, len(d.byID))
	for id, x := range d.byID {
		out = append(out, DictInfo{ID: id, Format: x.Format, Created: x.Created, Headers: x.Headers, Bytes: len(x.Content), Stored: x.Stored, Current: d.current[x.Format] == id})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Format != out[j].Format {
			return out[i].Format < out[j].Format
		}
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// firstTrain is how many recordings of a format without a dictionary an
// archive collects before it trains one as they are committed: few, so
// that a first ingest of a handful of small files already gets it. The
// dictionary is trained again from the recordings committed since, each
// time their number doubles, up to retrainBelow.
const firstTrain = 4

// firstDicts trains the first heads dictionary of each format that has
// none, and no recordings waiting for one, from the headers of a commit
// that writes at least firstTrain recordings of it: their heads are then
// compressed with it as they are written, instead of written once plain
// and again by learnHeads (24 small files into a fresh archive: that
// second write and the catalog's compaction after it were 11 ms of 160).
// results are the commit's decisions; headers of recordings it does not
// write (duplicates, takedowns) are never offered. Best effort, as
// learnHeads is.
func (a *Archive) firstDicts(pend []*Pending, results []Result) {
	if a.opts.ReadOnly {
		return
	}
	headers := map[string][][]byte{}
	for i, p := range pend {
		if results[i].Outcome.writes() {
			headers[p.format] = append(headers[p.format], p.header)
		}
	}
	d := &a.dicts
	for format, hs := range headers {
		d.mu.Lock()
		_, has := d.current[format]
		wait := d.barren[format] || len(d.early[format]) > 0
		d.mu.Unlock()
		if has || wait || len(hs) < firstTrain {
			continue
		}
		var t chunkenc.HeadsTrainer
		for i := len(hs) - 1; i >= max(0, len(hs)-trainOffers); i-- {
			if t.Offer(hs[i]) {
				break // full
			}
		}
		_, _ = a.addTrained(format, len(hs), &t) // too little is found barren by learnHeads
	}
}

// addTrained stores what t was offered as format's dictionary, made when
// the archive held headers recordings of it, unless it is under
// minDictContent; it reports whether it stored one.
func (a *Archive) addTrained(format string, headers int, t *chunkenc.HeadsTrainer) (bool, error) {
	content := t.Content()
	if len(content) < minDictContent {
		return false, nil
	}
	return true, a.addDict(chunkenc.Dict{ID: chunkenc.DictID(content), Format: format, Created: a.opts.Now().UTC().Truncate(time.Second), Headers: headers, Content: content})
}

// learnHeads notes the recordings a commit archived of formats whose
// dictionary is missing or young (trained on fewer than retrainBelow
// recordings), and when a format has firstTrain of them, or twice as many
// as its dictionary was trained on, trains its dictionary from them and
// compresses their heads again. It is best effort: a failure leaves the
// dictionary to Recompress.
func (a *Archive) learnHeads(ctx context.Context, results []Result) {
	if a.opts.ReadOnly {
		return
	}
	ready := map[string][]headsRef{}
	d := &a.dicts
	d.mu.Lock()
	for _, r := range results {
		m := r.Manifest
		if !r.Outcome.writes() || m == nil || m.Live {
			continue
		}
		if d.barren[m.Format] {
			continue
		}
		need := firstTrain
		if id, ok := d.current[m.Format]; ok {
			if d.byID[id].Headers >= retrainBelow {
				continue
			}
			need = 2 * max(d.byID[id].Headers, 1)
		}
		if d.early == nil {
			d.early = map[string][]headsRef{}
		}
		rs := append(d.early[m.Format], headsRef{id: m.ID, ingested: m.Ingested, headerLen: m.HeaderBytes, trailerLen: m.TrailerBytes})
		d.early[m.Format] = rs
		if len(rs) >= need {
			ready[m.Format] = slices.Clone(rs)
		}
	}
	d.mu.Unlock()
	for format, rs := range ready {
		sample := &headsSample{newest: map[string][]headsRef{format: rs}, count: map[string]int{format: len(rs)}}
		trained, err := a.trainHeadsDicts(ctx, sample, false)
		d.mu.Lock()
		switch {
		case err != nil || len(trained) == 0:
			// Headers too small or too few to make one, or unreadable:
			// the format is left to Recompress (offered again, its list
			// would grow and be read at every commit).
			if d.barren == nil {
				d.barren = map[string]bool{}
			}
			d.barren[format] = true
			delete(d.early, format)
		case len(rs) >= retrainBelow:
			delete(d.early, format) // grown up: not trained by the commits again
		}
		d.mu.Unlock()
		if err != nil || len(trained) == 0 {
			continue
		}
		ids := make([]uuid.UUID, len(rs))
		for i, r := range rs {
			ids[i] = r.id
		}
		_, _, _ = a.rewriteHeadsBatch(ids)
	}
}

// trainOffers bounds the headers a format's training reads: the newest
// recordings; a dictionary is full long before on varied headers, and
// one server's headers add nothing after the first few.
const trainOffers = 256

// retrainBelow: a dictionary trained on fewer recordings than this is
// trained again once the archive holds twice as many of its format, so
// the dictionary of a young archive grows with it and then stays.
const retrainBelow = 64

// headsSample keeps, per format, the newest sealed recordings offered
// (at most trainOffers) and how many there were: what training reads,
// in bounded memory whatever the archive's size.
type headsSample struct {
	newest map[string][]headsRef
	count  map[string]int
}

// add offers recording m.
func (s *headsSample) add(m *Manifest) {
	if s.newest == nil {
		s.newest, s.count = map[string][]headsRef{}, map[string]int{}
	}
	s.count[m.Format]++
	rs := append(s.newest[m.Format], headsRef{id: m.ID, ingested: m.Ingested, headerLen: m.HeaderBytes, trailerLen: m.TrailerBytes})
	if len(rs) >= 2*trainOffers {
		rs = newestFirst(rs)[:trainOffers]
	}
	s.newest[m.Format] = rs
}

// newestFirst sorts rs by ingest time, newest first.
func newestFirst(rs []headsRef) []headsRef {
	sort.Slice(rs, func(i, j int) bool { return rs[i].ingested.After(rs[j].ingested) })
	return rs
}

// trainHeadsDicts trains a dictionary for each format of sample that has
// none, has one trained on few recordings (retrainBelow), or all with
// retrain, from the newest recordings' headers. It returns the formats
// trained.
func (a *Archive) trainHeadsDicts(ctx context.Context, sample *headsSample, retrain bool) ([]string, error) {
	formats := make([]string, 0, len(sample.newest))
	for f := range sample.newest {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	var trained []string
	for _, format := range formats {
		if !retrain && !a.needsDict(format, sample.count[format]) {
			continue
		}
		rs := newestFirst(sample.newest[format])
		var t chunkenc.HeadsTrainer
		for _, r := range rs[:min(len(rs), trainOffers)] {
			if err := ctx.Err(); err != nil {
				return trained, err
			}
			h, _, err := a.heads(r.id, r.headerLen, r.trailerLen)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return trained, fmt.Errorf("archive: train %s dictionary: %s: %w", format, r.id, err)
			}
			if t.Offer(h) {
				break // full
			}
		}
		added, err := a.addTrained(format, sample.count[format], &t)
		if err != nil {
			return trained, err
		}
		if added {
			trained = append(trained, format)
		}
	}
	return trained, nil
}

// minDictContent: headers shorter than this in all are not worth a
// dictionary (formats whose header is a few bytes).
const minDictContent = 256

// needsDict reports whether format, of which the archive holds n sealed
// recordings, should get a (new) dictionary.
func (a *Archive) needsDict(format string, n int) bool {
	d := &a.dicts
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.current[format]
	if !ok {
		return true
	}
	seen := d.byID[id].Headers
	return seen < retrainBelow && n >= 2*max(seen, 1)
}

// headsRef names a recording whose heads a pass may read or rewrite.
type headsRef struct {
	id                    uuid.UUID
	ingested              time.Time
	headerLen, trailerLen int64
}

// heads reads and decodes recording id's header and trailer.
func (a *Archive) heads(id uuid.UUID, headerLen, trailerLen int64) (header, trailer []byte, err error) {
	var rec []byte
	err = a.catalog.View(func(tx *bolt.Tx) error {
		rec = bytes.Clone(tx.Bucket(bucketHeads).Get(id[:]))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if rec == nil {
		return nil, nil, ErrNotFound
	}
	return chunkenc.DecodeHeads(a.decoder(), rec, headerLen, trailerLen)
}

// headsRewriteBatch is how many recordings' heads one transaction rewrites.
const headsRewriteBatch = 256

// rewriteHeads compresses again, with the current dictionary of their
// format, the heads records that use another (or none), and returns how
// many it rewrote and the stored bytes that saved. It walks the heads in
// batches, each read in a short transaction and rewritten in one under
// the commit lock, which skips a recording that is live or moved to the
// remote store by then. A record that already uses a current dictionary
// costs one look at its frame header; the others, their manifest.
func (a *Archive) rewriteHeads(ctx context.Context) (n int, saved int64, err error) {
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return n, saved, err
		}
		var ids []uuid.UUID
		cur := a.currentDicts()
		err := a.catalog.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketHeads).Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for scanned := 0; k != nil && scanned < 16*headsRewriteBatch && len(ids) < headsRewriteBatch; k, v = c.Next() {
				scanned++
				after = append(after[:0], k...)
				if have, err := chunkenc.HeadsDictID(v); err == nil && !cur[have] && len(k) == 16 {
					ids = append(ids, uuid.UUID(k))
				}
			}
			if k == nil {
				after = nil
			}
			return nil
		})
		if err != nil {
			return n, saved, err
		}
		bn, bs, err := a.rewriteHeadsBatch(ids)
		n, saved = n+bn, saved+bs
		if err != nil {
			return n, saved, err
		}
		if after == nil {
			return n, saved, a.catalog.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketSettings).Delete(settingHeadsRewrite)
			})
		}
	}
}

// headsRewritePending reports whether a heads dictionary was added since
// the last complete rewriteHeads.
func (a *Archive) headsRewritePending() (bool, error) {
	var pending bool
	err := a.catalog.View(func(tx *bolt.Tx) error {
		pending = tx.Bucket(bucketSettings).Get(settingHeadsRewrite) != nil
		return nil
	})
	return pending, err
}

// currentDicts returns the set of ids of current dictionaries.
func (a *Archive) currentDicts() map[uint32]bool {
	a.dicts.mu.Lock()
	defer a.dicts.mu.Unlock()
	cur := make(map[uint32]bool, len(a.dicts.current))
	for _, id := range a.dicts.current {
		cur[id] = true
	}
	return cur
}

func (a *Archive) rewriteHeadsBatch(ids []uuid.UUID) (n int, saved int64, err error) {
	if len(ids) == 0 {
		return 0, 0, nil
	}
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		hb := tx.Bucket(bucketHeads)
		for _, id := range ids {
			rec := hb.Get(id[:])
			if rec == nil {
				continue
			}
			m, err := getManifest(tx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			want, ok := a.currentDict(m.Format)
			if !ok || m.Live || m.Remote != "" {
				continue
			}
			if have, err := chunkenc.HeadsDictID(rec); err != nil || have == want {
				continue // a damaged record is Check's to report
			}
			h, t, err := chunkenc.DecodeHeads(a.decoder(), rec, m.HeaderBytes, m.TrailerBytes)
			if err != nil {
				continue
			}
			nrec := a.encodeHeads(m.Format, h, t)
			if len(nrec) >= len(rec) {
				continue
			}
			saving := int64(len(rec) - len(nrec))
			if err := hb.Put(id[:], nrec); err != nil {
				return err
			}
			m.StoredBytes -= saving
			if err := putManifest(tx, m); err != nil {
				return err
			}
			n++
			saved += saving
		}
		return nil
	})
	return n, saved, err
}

// currentDict returns the id of format's current dictionary.
func (a *Archive) currentDict(format string) (uint32, bool) {
	a.dicts.mu.Lock()
	defer a.dicts.mu.Unlock()
	id, ok := a.dicts.current[format]
	return id, ok
}
