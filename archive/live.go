// Live recordings: a file that a game server is still writing is one
// recording from its first bytes, grown in place as they arrive
// (docs/live.md). A Growth collects what the codec's SplitTail hands over
// (the rewritten open tail chunk and the chunks after it, the new events)
// and CommitGrow writes it: the new blobs into the recording's shard (the
// tail's blob is overwritten under its key), then the manifest, events,
// live state and change log entry in one catalog transaction.
//
// Events are only appended: a codec sends an event once it is final, and
// the archive adds it to the recording's event pieces (events.go) without
// reading the archived ones, so a grow costs what it adds.
//
// The sha256 of the native bytes advances without re-reading the file:
// crypto/sha256's digest implements encoding.BinaryMarshaler, and its state
// after the last archived byte is stored with the recording.
//
// A live recording may also have a header that every grow rewrites (an
// HCRP segment set, whose preamble before the chunks holds counts and an
// index: Growth.RewritesHeader). Its grows only append chunks, never send
// an archived one again, and shift the archived chunks' file offsets by
// the change of the header's length; the sha256 then covers the chunk
// bytes (Manifest.ChunksSHA256), and sealing reads the archived chunks
// once to hash the whole file.

package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/archive/internal/chunkenc"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
)

// ChangeGrow is the change log operation of a live recording that grew:
// its events from Change.From on are new or changed, the ones before are
// as the search index has them.
const ChangeGrow ChangeOp = "grow"

// liveState is what extending a live recording resumes from.
type liveState struct {
	// End is how many native bytes are archived (header and chunks).
	End int64 `json:"end"`
	// SHA is the crypto/sha256 state after those bytes.
	SHA []byte `json:"sha"`
	// Codec is the codec's TailResult.State.
	Codec []byte `json:"codec"`
	// TailResume is the open tail chunk's resume state.
	TailResume []byte `json:"tail_resume"`
	// HeaderChanges says every grow rewrites the header piece: SHA is of
	// the chunk bytes, and grows only append chunks.
	HeaderChanges bool `json:"header_changes,omitempty"`
}

// Live is an archived live recording as the next grow resumes it.
type Live struct {
	Manifest *Manifest
	// Header is the native header piece.
	Header []byte
	state  liveState
	// last is the last event piece, which the grow's first event extends
	// while it has room.
	last *eventPiece
}

// End returns how many bytes of the file the recording holds.
func (l *Live) End() int64 { return l.state.End }

// Tail returns the input for the codec's SplitTail: where the open tail
// chunk starts and what the codec left.
func (l *Live) Tail() formats.TailInput {
	in := formats.TailInput{Header: l.Header, State: l.state.Codec, Events: l.Manifest.EventCount, Chunks: len(l.Manifest.Chunks)}
	if n := len(l.Manifest.Chunks); n > 0 {
		t := l.Manifest.Chunks[n-1]
		in.Offset, in.StartTick, in.Seen, in.Resume = t.Offset, t.StartTick, t.Length, l.state.TailResume
	}
	return in
}

// ErrSealed is returned by LiveOf for a recording that is archived but not
// growing any more.
var ErrSealed = errors.New("the recording is sealed: it does not grow any more")

// LiveOf returns the live recording id: ErrNotFound when there is no
// recording id, ErrSealed when it is not live. Its archived events are not
// read (only the last piece's stored bytes).
func (a *Archive) LiveOf(id uuid.UUID) (*Live, error) {
	var l *Live
	var heads []byte
	err := a.catalog.View(func(tx *bolt.Tx) error {
		m, err := getManifest(tx, id)
		if err != nil {
			return err
		}
		if !m.Live {
			return fmt.Errorf("%s: %w", id, ErrSealed)
		}
		var v []byte
		if b := tx.Bucket(bucketLive); b != nil {
			v = b.Get(id[:])
		}
		if v == nil {
			return fmt.Errorf("archive: live recording %s has no live state", id)
		}
		l = &Live{Manifest: m}
		if err := json.Unmarshal(v, &l.state); err != nil {
			return fmt.Errorf("archive: live state of %s: %w", id, err)
		}
		heads = bytes.Clone(tx.Bucket(bucketHeads).Get(id[:]))
		l.last = lastEventPiece(tx, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if l.Header, _, err = chunkenc.DecodeHeads(a.decoder(), heads, l.Manifest.HeaderBytes, 0); err != nil {
		return nil, fmt.Errorf("archive: live recording %s: %w", id, err)
	}
	return l, nil
}

// Growth collects one grow of a live recording. It implements
// formats.Writer and formats.EventWriter for the codec's SplitTail.
type Growth struct {
	a      *Archive
	live   *Live // nil for a new live recording
	format string
	source string

	sha      hash.Hash
	hashFrom int64 // bytes before this file offset are hashed already
	off      int64 // file offset of the next piece
	header   []byte
	trailer  []byte
	chunks   []ChunkEntry
	resumes  [][]byte
	blobs    [][]byte
	scratch  []byte
	events   pieceWriter
	// rewrite: the header piece is rewritten by every grow (RewritesHeader);
	// newHeader: this grow has written it; shift: its change of length.
	rewrite, newHeader bool
	shift              int64
}

// NewGrowth starts a grow of live (nil: a new live recording of the given
// format, from the file's first byte).
func (a *Archive) NewGrowth(format, source string, live *Live) (*Growth, error) {
	g := &Growth{a: a, live: live, format: format, source: filepath.Base(source), sha: sha256.New(), events: pieceWriter{a: a}}
	if live != nil {
		g.events.next, g.events.last = live.Manifest.EventCount, live.last
		if err := g.sha.(encoding.BinaryUnmarshaler).UnmarshalBinary(live.state.SHA); err != nil {
			return nil, fmt.Errorf("archive: resume the sha256 of %s: %w", live.Manifest.ID, err)
		}
		g.hashFrom = live.state.End
		g.off = live.Tail().Offset
		g.header = live.Header
		if live.state.HeaderChanges {
			g.rewrite, g.off = true, live.state.End
		}
	}
	return g, nil
}

// RewritesHeader says that the recording's header piece is written anew
// by every grow, and grows only append chunks (formats.AppendableDir).
// Call it before the first piece of a new live recording; a grow of an
// existing one knows it from the recording.
func (g *Growth) RewritesHeader() error {
	if g.live != nil && !g.rewrite {
		return fmt.Errorf("archive: live recording %s keeps its header", g.live.Manifest.ID)
	}
	if g.off != 0 && g.live == nil {
		return errors.New("archive: RewritesHeader after the first piece")
	}
	g.rewrite = true
	return nil
}

// Header implements formats.Writer.
func (g *Growth) Header(b []byte) error {
	switch {
	case g.rewrite && !g.newHeader && len(g.chunks) == 0:
		old := int64(0)
		if g.live != nil {
			old = int64(len(g.live.Header))
		}
		g.header, g.newHeader = bytes.Clone(b), true
		if g.header == nil {
			g.header = []byte{}
		}
		g.shift = int64(len(b)) - old
		g.off += g.shift // not hashed: see Manifest.ChunksSHA256
		return nil
	case g.rewrite, g.live != nil, g.header != nil:
		return errors.New("archive: header must come first, once")
	}
	g.header = bytes.Clone(b)
	g.write(b)
	return nil
}

// write hashes the bytes of b that were not hashed before and moves on.
func (g *Growth) write(b []byte) {
	if g.rewrite {
		// Only new chunks come: every byte is hashed.
		g.sha.Write(b)
		g.off += int64(len(b))
		return
	}
	if skip := g.hashFrom - g.off; skip < int64(len(b)) {
		g.sha.Write(b[max(skip, 0):])
	}
	g.off += int64(len(b))
}

// Chunk implements formats.Writer. The first chunk of a grow must extend
// the open tail chunk: same start, and its archived bytes as a prefix
// (compared by CRC-32C, which the tail's index entry holds).
func (g *Growth) Chunk(c formats.Chunk, native []byte) error {
	if g.trailer != nil {
		return errors.New("archive: chunk after trailer")
	}
	var prev *formats.Chunk
	if n := len(g.chunks); n > 0 {
		prev = &formats.Chunk{StartTick: g.chunks[n-1].StartTick}
	} else if g.rewrite && g.live != nil {
		if !g.newHeader {
			return errors.New("archive: a grow that rewrites the header writes it first")
		}
		// Appended after the last archived chunk, which stays.
		t := g.live.Manifest.Chunks[len(g.live.Manifest.Chunks)-1]
		if c.StartTick != t.StartTick+t.Ticks {
			return &ReplaceError{ID: g.live.Manifest.ID, Reason: fmt.Sprintf("its next chunk starts at tick %d, the archived ones end at tick %d: it does not extend the recording", c.StartTick, t.StartTick+t.Ticks)}
		}
		prev = &formats.Chunk{StartTick: t.StartTick}
	} else if g.live != nil {
		if err := g.extendsTail(c, native); err != nil {
			return err
		}
	}
	if err := formats.CheckChunk(prev, c, len(native)); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if len(g.chunks) == 0 && g.live == nil && g.header == nil {
		g.header = []byte{}
	}
	// The archive's own encoder, not a pooled one: a pool is emptied by
	// the garbage collector, and a new encoder (8 MiB of tables) per grow
	// was most of what a small grow allocated.
	blob := chunkenc.Encode(g.a.enc, &g.scratch, c.Resume, native, c.Precompressed)
	g.chunks = append(g.chunks, ChunkEntry{
		StartTick: c.StartTick, Ticks: c.Ticks, Time: c.Time,
		Offset: g.off, Length: int64(len(native)), Stored: int64(len(blob)),
		CRC: chunkenc.Checksum(native), Precompressed: c.Precompressed,
	})
	g.resumes = append(g.resumes, bytes.Clone(c.Resume))
	g.blobs = append(g.blobs, blob)
	g.write(native)
	return nil
}

// extendsTail checks the first chunk of a grow against the open tail.
func (g *Growth) extendsTail(c formats.Chunk, native []byte) error {
	m := g.live.Manifest
	t := m.Chunks[len(m.Chunks)-1]
	if c.StartTick != t.StartTick || int64(len(native)) < t.Length || chunkenc.Checksum(native[:t.Length]) != t.CRC {
		return &ReplaceError{ID: m.ID, Reason: fmt.Sprintf("the file's bytes at offset %d differ from the archived chunk at tick %d: it does not extend the recording", t.Offset, t.StartTick)}
	}
	return nil
}

// Trailer implements formats.Writer.
func (g *Growth) Trailer(b []byte) error {
	if g.trailer != nil {
		return errors.New("archive: trailer given twice")
	}
	g.trailer = bytes.Clone(b)
	g.write(b)
	return nil
}

// Event implements formats.EventWriter: e follows the recording's
// archived events and the grow's earlier ones. It is final: no grow
// changes an archived event.
func (g *Growth) Event(e formats.Event) error { return g.events.add(&e) }

// Chunks reports how many chunks the grow holds (the rewritten tail
// included).
func (g *Growth) Chunks() int { return len(g.chunks) }

// Changed reports whether the grow has anything to commit: chunks, or a
// rewritten header that differs from the archived one.
func (g *Growth) Changed() bool {
	return len(g.chunks) > 0 || g.trailer != nil ||
		g.newHeader && (g.live == nil || !bytes.Equal(g.header, g.live.Header))
}

// GrowResult says what CommitGrow did.
type GrowResult struct {
	Manifest *Manifest
	// Created says the grow made a new live recording.
	Created bool
	// Sealed says the recording is complete now and grows no more.
	Sealed bool
	// Added is how many native bytes the grow added.
	Added int64
}

// CommitGrow writes a grow: res is what the codec's SplitTail returned;
// seal ends the recording (the file is finished or idle). A new live
// recording takes the id its file names (Metadata.ID).
func (a *Archive) CommitGrow(ctx context.Context, g *Growth, res *formats.TailResult, seal bool) (*GrowResult, error) {
	if res == nil || res.Meta == nil {
		return nil, errors.New("archive: grow without metadata")
	}
	if len(g.chunks) == 0 && !(g.rewrite && g.live != nil) {
		return nil, errors.New("archive: grow without chunks")
	}
	if g.rewrite && !g.newHeader {
		return nil, errors.New("archive: a grow that rewrites the header must write it")
	}
	if g.off != res.End {
		return nil, fmt.Errorf("archive: the codec's pieces end at byte %d, its result at %d", g.off, res.End)
	}
	seal = seal || res.Finished
	id := res.Meta.ID
	if g.live != nil {
		id = g.live.Manifest.ID
	}
	if id == uuid.Nil {
		return nil, errors.New("archive: a live recording needs the id its file names")
	}
	for i := range res.Meta.Events {
		if err := g.Event(res.Meta.Events[i]); err != nil {
			return nil, err
		}
	}
	pieces := g.events.close()
	shaState, err := g.sha.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("archive: save the sha256 state: %w", err)
	}
	sum := g.sha.Sum(nil)
	chunksOnly := g.rewrite
	if g.rewrite && seal {
		if sum, err = a.hashRewritten(ctx, g); err != nil {
			return nil, err
		}
		chunksOnly = false
	}

	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	now := a.opts.Now().UTC()
	var old *Manifest
	sweepFirst := false
	err = a.catalog.View(func(tx *bolt.Tx) error {
		// A taken-down identity never grows: checked before any byte of
		// it is written, so it never appears.
		if t, err := takedownOfIdentity(tx, id, res.Meta.Session); err != nil {
			return err
		} else if t != nil {
			return &TakenDownError{Takedown: *t}
		}
		m, err := getManifest(tx, id)
		switch {
		case g.live == nil && err == nil:
			return &ReplaceError{ID: id, Reason: "a recording with this id is archived already"}
		case g.live == nil && errors.Is(err, ErrNotFound):
			sweepFirst = tx.Bucket(bucketTombstones).Get(id[:]) != nil
		case err != nil:
			return err
		case !m.Live:
			return &ReplaceError{ID: id, Reason: "it is sealed"}
		case m.NativeBytes != g.live.Manifest.NativeBytes || len(m.Chunks) != len(g.live.Manifest.Chunks) || m.EventCount != g.live.Manifest.EventCount:
			return fmt.Errorf("archive: live recording %s changed during the grow", id)
		default:
			old = m
			if err := canGrow(m, g.format, res.Meta.Session); err != nil {
				return err
			}
		}
		if seal {
			if t, err := takedownOf(tx, sum); err != nil {
				return err
			} else if t != nil {
				return &TakenDownError{Takedown: *t}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sweepFirst {
		if _, err := a.Sweep(ctx); err != nil {
			return nil, fmt.Errorf("archive: grow: finish a pending delete: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	m := a.grownManifest(old, g, res, id, now)
	m.SHA256, m.Live, m.ChunksSHA256 = hex.EncodeToString(sum), !seal, chunksOnly
	ticks := make([]int64, len(g.chunks))
	for i, c := range g.chunks {
		ticks[i] = c.StartTick
	}
	a.writing.add(m.owner())
	defer a.writing.done(m.owner()) // once the manifest is committed
	if err := a.writeFault(a.shardPath(m.Shard)); err != nil {
		return nil, fmt.Errorf("archive: write chunks to shard %s: %w", m.Shard, err)
	}
	if err := a.writeBlobs(m.Shard, m.owner(), ticks, g.blobs); err != nil {
		return nil, err
	}
	tail := g.live.tailResume()
	if n := len(g.resumes); n > 0 {
		tail = g.resumes[n-1]
	}
	state, err := json.Marshal(liveState{End: res.End, SHA: shaState, Codec: res.State, TailResume: tail, HeaderChanges: g.rewrite})
	if err != nil {
		return nil, err
	}
	err = a.catalog.Update(func(tx *bolt.Tx) error {
		if err := a.writeFault(filepath.Join(a.dir, "catalog.db")); err != nil {
			return err
		}
		return a.putGrown(tx, old, m, pieces, g, sum, state)
	})
	if err != nil {
		return nil, fmt.Errorf("archive: commit grow of %s: %w", id, err)
	}
	added := res.End
	if old != nil {
		added -= old.NativeBytes
	}
	return &GrowResult{Manifest: m, Created: old == nil, Sealed: seal, Added: added}, nil
}

// writeFault is Options.WriteFault's answer for file (nil without one).
func (a *Archive) writeFault(file string) error {
	if a.opts.WriteFault == nil {
		return nil
	}
	return a.opts.WriteFault(file)
}

// canGrow refuses to extend m with a file of another format or session,
// and extends no held recording: ids cannot be hijacked.
func canGrow(m *Manifest, format, session string) error {
	refuse := func(format string, args ...any) error {
		return &ReplaceError{ID: m.ID, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case m.Hold != nil:
		return refuse("it is held (%s)", m.Hold.Reason)
	case m.Remote != "":
		return refuse("its chunks moved to the remote store")
	case m.Format != format:
		return refuse("it is a %s recording, the input is %s", m.Format, format)
	case m.Meta.Session != session:
		return refuse("it belongs to session %q, the input to %q", m.Meta.Session, session)
	}
	return nil
}

// grownManifest builds the manifest after a grow: old's chunks but its
// open tail, then the grow's.
func (a *Archive) grownManifest(old *Manifest, g *Growth, res *formats.TailResult, id uuid.UUID, now time.Time) *Manifest {
	meta := *res.Meta
	meta.Events = nil
	m := &Manifest{ID: id, Format: g.format, Ingested: now, SourceName: g.source}
	if old != nil {
		c := *old
		m = &c
		if g.rewrite {
			// The archived chunks stay, moved by the header's change.
			m.Chunks = make([]ChunkEntry, 0, len(old.Chunks)+len(g.chunks))
			for _, e := range old.Chunks {
				e.Offset += g.shift
				m.Chunks = append(m.Chunks, e)
			}
			m.Chunks = append(m.Chunks, g.chunks...)
		} else {
			m.Chunks = append(old.Chunks[:len(old.Chunks)-1:len(old.Chunks)-1], g.chunks...)
		}
	} else {
		start := meta.Start
		if start.IsZero() {
			start = now
		}
		m.Shard = a.opts.ShardPeriod(start)
		m.Chunks = g.chunks
	}
	m.Meta = meta
	m.NativeBytes = res.End
	m.HeaderBytes, m.TrailerBytes = int64(len(g.header)), int64(len(g.trailer))
	m.EventCount = g.events.next
	return m
}

// putGrown writes the catalog side of a grow inside tx.
func (a *Archive) putGrown(tx *bolt.Tx, old, m *Manifest, pieces []eventPiece, g *Growth, sum, state []byte) error {
	heads := a.encodeHeads(m.Format, g.header, g.trailer)
	m.StoredBytes = int64(len(heads))
	for _, c := range m.Chunks {
		m.StoredBytes += c.Stored
	}
	if err := tx.Bucket(bucketHeads).Put(m.ID[:], heads); err != nil {
		return err
	}
	if old == nil {
		// A recording of this id deleted before may have left pieces
		// that a sweep did not reach; none may precede the new ones.
		if err := deleteEvents(tx, m.ID); err != nil {
			return err
		}
	}
	for _, p := range pieces {
		if err := tx.Bucket(bucketEvents).Put(eventPieceKey(m.ID, p.first), p.blob); err != nil {
			return err
		}
	}
	m.StoredBytes += eventsStored(tx, m.ID)
	sources := tx.Bucket(bucketSources)
	if old != nil {
		if s, err := hex.DecodeString(old.SHA256); err == nil && bytes.Equal(sources.Get(s), m.ID[:]) {
			if err := deleteSource(tx, s, old.NativeBytes); err != nil {
				return err
			}
		}
	}
	if !m.ChunksSHA256 && sources.Get(sum) == nil {
		if err := putSource(tx, sum, m.NativeBytes, m.ID); err != nil {
			return err
		}
	}
	if m.Meta.Session != "" {
		if err := tx.Bucket(bucketSessions).Put(sessionKey(m.Meta.Session, m.ID), nil); err != nil {
			return err
		}
	}
	live, err := tx.CreateBucketIfNotExists(bucketLive)
	if err != nil {
		return err
	}
	if m.Live {
		err = live.Put(m.ID[:], state)
	} else {
		err = live.Delete(m.ID[:])
	}
	if err != nil {
		return err
	}
	if err := putManifest(tx, m); err != nil {
		return err
	}
	if old == nil {
		return appendChange(tx, ChangePut, m.ID)
	}
	return appendChangeFrom(tx, ChangeGrow, m.ID, old.EventCount)
}

// appendChangeFrom is appendChange with Change.From.
func appendChangeFrom(tx *bolt.Tx, op ChangeOp, id uuid.UUID, from int) error {
	b := tx.Bucket(bucketChanges)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v, err := json.Marshal(Change{Op: op, ID: id, From: from})
	if err != nil {
		return err
	}
	return b.Put(seqKey(seq), v)
}

// tailResume is the archived open tail chunk's resume state (nil for a
// new recording).
func (l *Live) tailResume() []byte {
	if l == nil {
		return nil
	}
	return l.state.TailResume
}

// hashRewritten returns the sha256 of the whole file a sealing grow of a
// recording with a rewritten header leaves: the new header, the archived
// chunks read back from the shard (each checked against its CRC-32C),
// then the grow's own. This is the one time such a recording's archived
// bytes are read again.
func (a *Archive) hashRewritten(ctx context.Context, g *Growth) ([]byte, error) {
	h := sha256.New()
	h.Write(g.header)
	if g.live != nil {
		m := g.live.Manifest
		var buf, dst []byte
		for _, e := range m.Chunks {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			blob, err := a.readBlobInto(m.Shard, m.owner(), e.StartTick, buf)
			if err != nil {
				return nil, fmt.Errorf("archive: seal %s: chunk at tick %d: %w", m.ID, e.StartTick, err)
			}
			buf = blob
			native, _, err := a.decodeBlob(blob, e, m.Format, dst, true)
			if err != nil {
				return nil, fmt.Errorf("archive: seal %s: chunk at tick %d: %w", m.ID, e.StartTick, err)
			}
			if !e.Precompressed {
				dst = native
			}
			h.Write(native)
		}
	}
	for i, b := range g.blobs {
		native, _, err := a.decodeBlob(b, g.chunks[i], g.format, nil, true)
		if err != nil {
			return nil, fmt.Errorf("archive: seal: new chunk at tick %d: %w", g.chunks[i].StartTick, err)
		}
		h.Write(native)
	}
	h.Write(g.trailer)
	return h.Sum(nil), nil
}
