// A recording's searchable events as they arrive during its ingest: a JSON
// array compressed as it is written, so that neither the codec nor the
// Pending holds the events themselves until the commit (a server file of
// days holds hundreds of thousands, in bounded memory).

package archive

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/archive/internal/eventjson"
	"github.com/replayarchive/replay/formats"
	bolt "go.etcd.io/bbolt"
)

// eventWindow is the zstd window of the events' stream. Events repeat
// within minutes of play (the same commands, the same players), so a
// larger window buys little, while the encoder holds twice the window.
const eventWindow = 256 << 10

// eventStream compresses a recording's events as a JSON array: the value
// Archive.EachEvent and Archive.Events read back.
type eventStream struct {
	pool *encoderPool
	buf  bytes.Buffer
	enc  *zstd.Encoder
	line []byte // the event being written, reused
	n    int
}

// add appends e to the stream, starting it on the first event.
func (s *eventStream) add(e *formats.Event) error {
	if s.enc == nil {
		enc, err := s.pool.get()
		if err != nil {
			return fmt.Errorf("archive: events: %w", err)
		}
		enc.Reset(&s.buf)
		s.enc = enc
	}
	sep := byte(',')
	if s.n == 0 {
		sep = '['
	}
	s.line = append(eventjson.Append(append(s.line[:0], sep), e), '\n')
	if _, err := s.enc.Write(s.line); err != nil {
		return fmt.Errorf("archive: event %d: %w", s.n, err)
	}
	s.n++
	return nil
}

// close ends the array and returns the compressed value (nil without
// events) and how many events it holds. The encoder goes back to the pool.
func (s *eventStream) close() ([]byte, int, error) {
	if s.enc == nil {
		return nil, 0, nil
	}
	enc := s.enc
	s.enc = nil
	_, err := enc.Write([]byte{']'})
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	enc.Reset(io.Discard)
	s.pool.put(enc)
	if err != nil {
		return nil, 0, fmt.Errorf("archive: events: %w", err)
	}
	return s.buf.Bytes(), s.n, nil
}

// drop releases the stream of a recording that will not be committed.
func (s *eventStream) drop() {
	if s.enc != nil {
		s.enc.Reset(io.Discard)
		s.pool.put(s.enc)
		s.enc = nil
	}
	s.buf = bytes.Buffer{}
}

// Event implements formats.EventWriter: the event is compressed into the
// recording's stream at once, so a recording of any number of events holds
// only their compressed form until the commit.
func (p *Pending) Event(e formats.Event) error {
	if p.meta != nil {
		return fmt.Errorf("archive: event after Finish")
	}
	return p.events.add(&e)
}

// A live recording's events are stored as pieces (docs/live.md): each
// bucketEvents value under eventPieceKey(id, first) is zstd(JSON array)
// of the events from number first on, and the recording's events are the
// arrays of its values in key order, after the one under the bare id
// when there is one (a recording that grew live under an older build).
// A grow appends events without reading the earlier ones: it rewrites the
// last piece while that holds less than pieceBytes of JSON, then starts
// another, so a grow costs in proportion to its new events.

// pieceBytes bounds the JSON of one event piece: the most a grow decodes
// and compresses again besides its new events. At 64 KiB (some 600
// events) the pieces compress about as well as one stream.
const pieceBytes = 64 << 10

// eventPiece is one stored piece: its first event's number and its value.
type eventPiece struct {
	first int
	blob  []byte
}

// pieceWriter collects the events of one grow into pieces.
type pieceWriter struct {
	a *Archive
	// next is the number the next event gets; first the number of the
	// first event in raw, which holds "[" and the events so far, without
	// the closing "]".
	next, first int
	raw         []byte
	// last is the archived last piece, continued by the first event
	// while it holds less than pieceBytes (decoded then, not before).
	last  *eventPiece
	done  []eventPiece
	added int
}

// add appends e.
func (w *pieceWriter) add(e *formats.Event) error {
	if w.raw == nil {
		if err := w.start(); err != nil {
			return err
		}
	}
	if len(w.raw) >= pieceBytes {
		w.cut()
		w.raw, w.first = w.raw[:0], w.next
	}
	if w.first == w.next {
		w.raw = append(w.raw[:0], '[')
	} else {
		w.raw = append(w.raw, ',')
	}
	w.raw = append(eventjson.Append(w.raw, e), '\n')
	w.next++
	w.added++
	return nil
}

// start opens the first piece of the grow: the archived last piece again
// when it has room, else a new one.
func (w *pieceWriter) start() error {
	w.first, w.raw = w.next, make([]byte, 0, 4<<10)
	if w.last == nil {
		return nil
	}
	raw, err := w.a.decoder().DecodeAll(w.last.blob, nil)
	switch {
	case err != nil:
		return fmt.Errorf("archive: event piece %d: %w", w.last.first, err)
	case len(raw) < 3 || raw[0] != '[' || raw[len(raw)-1] != ']':
		return fmt.Errorf("archive: event piece %d: want a JSON array of events", w.last.first)
	case len(raw) < pieceBytes:
		w.first, w.raw = w.last.first, raw[:len(raw)-1]
	}
	return nil
}

// cut closes the piece in raw.
func (w *pieceWriter) cut() {
	// The archive's encoder (see Growth.Chunk): a piece is smaller than
	// its window.
	blob := w.a.enc.EncodeAll(append(w.raw, ']'), nil)
	w.done = append(w.done, eventPiece{first: w.first, blob: blob})
}

// close returns the pieces to write: new ones, and the archived last one
// when it was continued.
func (w *pieceWriter) close() []eventPiece {
	if w.raw != nil && w.next > w.first {
		w.cut()
		w.raw = nil
	}
	return w.done
}

// eventPieceKey is the bucketEvents key of the piece of recording id whose
// first event is number first.
func eventPieceKey(id uuid.UUID, first int) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(id[:]), uint64(first))
}

// eventKeyID returns the recording a bucketEvents key belongs to.
func eventKeyID(k []byte) (uuid.UUID, bool) {
	if len(k) != 16 && len(k) != 24 {
		return uuid.Nil, false
	}
	return uuid.UUID(k[:16]), true
}

// eventValues returns recording id's events values from the one that
// holds event from on, and the number of each value's first event.
// The values are tx's memory.
func eventValues(tx *bolt.Tx, id uuid.UUID, from int) (vals [][]byte, firsts []int) {
	c := tx.Bucket(bucketEvents).Cursor()
	var k, v []byte
	if from > 0 {
		// The last key at or before event from.
		if k, _ = c.Seek(eventPieceKey(id, from+1)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	}
	if k == nil || !bytes.HasPrefix(k, id[:]) {
		k, v = c.Seek(id[:])
	}
	for ; k != nil && bytes.HasPrefix(k, id[:]); k, v = c.Next() {
		switch len(k) {
		case 16:
			firsts = append(firsts, 0)
		case 24:
			firsts = append(firsts, int(binary.BigEndian.Uint64(k[16:])))
		default:
			continue
		}
		vals = append(vals, v)
	}
	return vals, firsts
}

// lastEventPiece returns recording id's last event piece, or nil.
func lastEventPiece(tx *bolt.Tx, id uuid.UUID) *eventPiece {
	c := tx.Bucket(bucketEvents).Cursor()
	// No piece starts at event 2⁶⁴-1: the key after the last piece.
	k, _ := c.Seek(eventPieceKey(id, -1))
	var v []byte
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if len(k) != 24 || !bytes.HasPrefix(k, id[:]) {
		return nil
	}
	return &eventPiece{first: int(binary.BigEndian.Uint64(k[16:])), blob: bytes.Clone(v)}
}

// eventKeys returns the bucketEvents keys of recording id.
func eventKeys(tx *bolt.Tx, id uuid.UUID) (keys [][]byte) {
	c := tx.Bucket(bucketEvents).Cursor()
	for k, _ := c.Seek(id[:]); k != nil && bytes.HasPrefix(k, id[:]); k, _ = c.Next() {
		if len(k) == 16 || len(k) == 24 {
			keys = append(keys, bytes.Clone(k))
		}
	}
	return keys
}

// eventsStored returns the bytes recording id's events values hold.
func eventsStored(tx *bolt.Tx, id uuid.UUID) int64 {
	var n int64
	vals, _ := eventValues(tx, id, 0)
	for _, v := range vals {
		n += int64(len(v))
	}
	return n
}

// deleteEvents removes recording id's events.
func deleteEvents(tx *bolt.Tx, id uuid.UUID) error {
	keys := eventKeys(tx, id)
	b := tx.Bucket(bucketEvents)
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// EachEvent calls fn with each searchable event stored for recording id, in
// order (n is its number), decoding them one at a time: a recording may hold
// hundreds of thousands of events, and the search index update must not
// hold them all (see query.Sync). fn must not keep e past its return. A
// recording without events calls fn never; an unknown id is not an error.
func (a *Archive) EachEvent(id uuid.UUID, fn func(n int, e *formats.Event) error) error {
	return a.EachEventFrom(id, 0, fn)
}

// EachEventFrom is EachEvent from event number from on: only the stored
// value holding event from and the ones after it are read, so the search
// index takes a live recording's new events without the old ones.
func (a *Archive) EachEventFrom(id uuid.UUID, from int, fn func(n int, e *formats.Event) error) error {
	var vals [][]byte
	var firsts []int
	err := a.catalog.View(func(tx *bolt.Tx) error {
		vals, firsts = eventValues(tx, id, from)
		for i, v := range vals {
			vals[i] = bytes.Clone(v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Decoded as a stream, not whole: the events of a long recording are
	// tens of MB of JSON.
	zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return fmt.Errorf("archive: events of %s: %w", id, err)
	}
	defer zr.Close()
	br := bufio.NewReaderSize(nil, 64<<10)
	n := -1
	for i, blob := range vals {
		if n >= 0 && firsts[i] != n {
			return fmt.Errorf("archive: events of %s: the piece of event %d follows event %d", id, firsts[i], n-1)
		}
		n = firsts[i]
		open := func() (io.Reader, error) { return zr, zr.Reset(bytes.NewReader(blob)) }
		k, err := eventjson.Each(br, open, n, from, fn)
		if err != nil {
			var de *eventjson.Error
			if errors.As(err, &de) {
				return fmt.Errorf("archive: events of %s: %w", id, err)
			}
			return err // fn's own
		}
		n += k
	}
	return nil
}

// Events returns the searchable events stored for recording id.
func (a *Archive) Events(id uuid.UUID) ([]formats.Event, error) {
	var evs []formats.Event
	err := a.EachEvent(id, func(_ int, e *formats.Event) error {
		evs = append(evs, *e)
		return nil
	})
	return evs, err
}

// eventsValue returns recording id's events as one value for the bare
// id, joining its pieces when it has any (a remote manifest holds one).
func (a *Archive) eventsValue(id uuid.UUID) ([]byte, error) {
	var whole []byte
	pieces := false
	err := a.catalog.View(func(tx *bolt.Tx) error {
		keys := eventKeys(tx, id)
		for _, k := range keys {
			pieces = pieces || len(k) == 24
		}
		whole = bytes.Clone(tx.Bucket(bucketEvents).Get(id[:]))
		return nil
	})
	if err != nil || !pieces {
		return whole, err
	}
	s := eventStream{pool: &a.encoders.event}
	err = a.EachEvent(id, func(_ int, e *formats.Event) error { return s.add(e) })
	if err != nil {
		s.drop()
		return nil, err
	}
	blob, _, err := s.close()
	return blob, err
}
