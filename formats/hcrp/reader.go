// This file reads recordings: compacted files (NewReader), live recording
// directories (OpenDir), the tick records inside chunks, and the world
// state rebuilt by seeking to the nearest snapshot chunk and replaying
// events from there.

package hcrp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/bounded"
)

// Reader gives random access to the chunks of one recording.
type Reader struct {
	Header *Header
	// MetaRaw is the whole metadata NBT blob (see Meta for its known keys).
	MetaRaw []byte
	Index   []IndexEntry

	meta *Meta // decoded on first use

	// read returns compressed chunk i, in dst when it has room.
	read    func(ctx context.Context, i int, dst []byte) ([]byte, error)
	comp    []byte
	closers []io.Closer
	dec     *zstd.Decoder
	raw     []byte
}

func newDecoder() (*zstd.Decoder, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxChunkLen))
	if err != nil {
		return nil, fmt.Errorf("hcrp: zstd decoder: %w", err)
	}
	return d, nil
}

// parsePreamble decodes header, metadata and index from b, which holds at
// least the whole preamble. segmented selects the offset rule of the index.
func parsePreamble(b []byte, segmented bool) (*Header, []byte, []IndexEntry, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, nil, nil, err
	}
	end := h.PreambleLen()
	if int64(len(b)) < end {
		return nil, nil, nil, formats.Errorf(Name, int64(len(b)), "expected a %d-byte preamble (header, %d bytes of metadata, %d bytes of index), got %d bytes",
			end, h.MetadataLen, h.IndexLen, len(b))
	}
	meta := b[HeaderSize : HeaderSize+int(h.MetadataLen)]
	if err := checkCompound(meta); err != nil {
		return nil, nil, nil, &formats.Error{Format: Name, Offset: HeaderSize, What: "expected a network NBT compound", Err: err}
	}
	ibase := int64(HeaderSize) + int64(h.MetadataLen)
	index, err := parseIndex(b[ibase:end], int(h.Chunks), ibase)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkIndex(h, index, segmented, end, ibase); err != nil {
		return nil, nil, nil, err
	}
	return h, meta, index, nil
}

func newReader(h *Header, meta []byte, index []IndexEntry) (*Reader, error) {
	dec, err := newDecoder()
	if err != nil {
		return nil, err
	}
	return &Reader{Header: h, MetaRaw: meta, Index: index, dec: dec}, nil
}

// Meta returns the known keys of the metadata, decoded on first use. Keys
// of an unexpected shape are left empty.
func (r *Reader) Meta() *Meta {
	if r.meta == nil {
		r.meta, _ = DecodeMeta(r.MetaRaw)
		if r.meta == nil {
			r.meta = &Meta{}
		}
	}
	return r.meta
}

// readPreamble reads the preamble at the start of r (size bytes long).
func readPreamble(r io.ReaderAt, size int64, segmented bool) (*Header, []byte, []IndexEntry, error) {
	head := make([]byte, min(size, HeaderSize))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, nil, fmt.Errorf("hcrp: read header: %w", err)
	}
	h, err := ParseHeader(head)
	if err != nil {
		return nil, nil, nil, err
	}
	n := h.PreambleLen()
	if n > size {
		return nil, nil, nil, formats.Errorf(Name, size, "expected a %d-byte preamble, the file has %d bytes", n, size)
	}
	pre := make([]byte, n)
	if _, err := r.ReadAt(pre, 0); err != nil {
		return nil, nil, nil, fmt.Errorf("hcrp: read preamble: %w", err)
	}
	return parsePreamble(pre, segmented)
}

// NewReader opens a compacted file of size bytes.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	h, meta, index, err := readPreamble(r, size, false)
	if err != nil {
		return nil, err
	}
	if n := len(index); n > 0 {
		if end := index[n-1].Offset + int64(index[n-1].CompressedLen); end > size {
			return nil, formats.Errorf(Name, size, "chunk %d ends at %d, past the end of the %d-byte file", n-1, end, size)
		}
	}
	rd, err := newReader(h, meta, index)
	if err != nil {
		return nil, err
	}
	rd.read = func(_ context.Context, i int, dst []byte) ([]byte, error) {
		e := &rd.Index[i]
		b := grow(dst, int(e.CompressedLen))
		if _, err := r.ReadAt(b, e.Offset); err != nil {
			return nil, fmt.Errorf("hcrp: read chunk %d: %w", i, err)
		}
		return b, nil
	}
	return rd, nil
}

// segmentSet is a live recording directory: its preamble and the open
// segment files the index refers to.
type segmentSet struct {
	hdr      *Header
	meta     []byte
	index    []IndexEntry
	files    []segmentFile
	spans    []int64 // indexed bytes of each segment
	finished bool
}

// segmentFile is an open segment: fs.File with random access (os.File and
// testing/fstest files have it).
type segmentFile interface {
	fs.File
	io.ReaderAt
}

// openSegmentSet reads the preamble of the recording directory fsys and
// checks that every indexed chunk is present in its segment file.
func openSegmentSet(fsys fs.FS) (*segmentSet, error) {
	f, err := fsys.Open(PreambleFile)
	if err != nil {
		return nil, fmt.Errorf("hcrp: %w", err)
	}
	defer f.Close()
	h, meta, index, err := readPreambleStream(f)
	if err != nil {
		var fe *formats.Error
		if errors.As(err, &fe) {
			fe.What = PreambleFile + ": " + fe.What
		}
		return nil, err
	}
	s := &segmentSet{hdr: h, meta: meta, index: index}
	_, err = fs.Stat(fsys, FinishedFile)
	s.finished = err == nil
	for i := range index {
		seg, off := index[i].Segment()
		end := off + int64(index[i].CompressedLen)
		if seg == len(s.files) {
			f, err := fsys.Open(SegmentName(seg))
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("hcrp: chunk %d: %w", i, err)
			}
			sf, ok := f.(segmentFile)
			if !ok {
				f.Close()
				s.Close()
				return nil, fmt.Errorf("hcrp: %s: file system gives no random access", SegmentName(seg))
			}
			s.files = append(s.files, sf)
			s.spans = append(s.spans, 0)
		}
		s.spans[seg] = end
	}
	for seg, sf := range s.files {
		st, err := sf.Stat()
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("hcrp: %w", err)
		}
		if st.Size() < s.spans[seg] {
			s.Close()
			return nil, formats.Errorf(Name, st.Size(), "%s: expected at least %d bytes of indexed chunks, the segment is truncated at %d",
				SegmentName(seg), s.spans[seg], st.Size())
		}
	}
	return s, nil
}

// readPreambleStream reads a preamble from the start of r, allocating no
// more than the bytes that are there.
func readPreambleStream(r io.Reader) (*Header, []byte, []IndexEntry, error) {
	head, err := bounded.ReadN(r, HeaderSize, HeaderSize, "header")
	if err != nil {
		if _, herr := ParseHeader(head); herr != nil {
			return nil, nil, nil, herr
		}
		return nil, nil, nil, &formats.Error{Format: Name, Offset: int64(len(head)), What: fmt.Sprintf("expected a %d-byte header", HeaderSize), Err: err}
	}
	h, err := ParseHeader(head)
	if err != nil {
		return nil, nil, nil, err
	}
	pre, err := bounded.AppendN(head, r, h.PreambleLen()-HeaderSize, maxPreambleLen, "metadata and index")
	if err != nil {
		return nil, nil, nil, &formats.Error{Format: Name, Offset: int64(len(pre)),
			What: fmt.Sprintf("expected %d bytes of metadata and index", h.PreambleLen()-HeaderSize), Err: err}
	}
	return parsePreamble(pre, true)
}

// Close closes the segment files.
func (s *segmentSet) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}

// OpenDir opens a live (or finished but not compacted) recording directory
// holding preamble.dat and segment files. Close the Reader when done.
func OpenDir(dir string) (*Reader, error) { return OpenDirFS(os.DirFS(dir)) }

// OpenDirFS is OpenDir for a recording directory given as a file system
// (its segment files must implement io.ReaderAt).
func OpenDirFS(fsys fs.FS) (*Reader, error) {
	s, err := openSegmentSet(fsys)
	if err != nil {
		return nil, err
	}
	rd, err := newReader(s.hdr, s.meta, s.index)
	if err != nil {
		s.Close()
		return nil, err
	}
	rd.closers = append(rd.closers, s)
	rd.read = func(_ context.Context, i int, dst []byte) ([]byte, error) {
		e := &rd.Index[i]
		seg, off := e.Segment()
		b := grow(dst, int(e.CompressedLen))
		if _, err := s.files[seg].ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("hcrp: %s: read chunk %d: %w", SegmentName(seg), i, err)
		}
		return b, nil
	}
	return rd, nil
}

// Close releases the reader's files and decoder.
func (r *Reader) Close() error {
	var first error
	for _, c := range r.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	if r.dec != nil {
		r.dec.Close()
		r.dec = nil
	}
	return first
}

// Ticks returns the number of ticks in the recording.
func (r *Reader) Ticks() int64 { return int64(r.Header.Ticks) }

// RawChunk returns chunk i as stored (one zstd frame).
func (r *Reader) RawChunk(ctx context.Context, i int) ([]byte, error) {
	if i < 0 || i >= len(r.Index) {
		return nil, fmt.Errorf("hcrp: no chunk %d", i)
	}
	return r.read(ctx, i, nil)
}

// grow returns a slice of n bytes, reusing b when it has room.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// Chunk returns the decompressed tick records of chunk i. The slice is
// reused by the next call.
func (r *Reader) Chunk(ctx context.Context, i int) ([]byte, error) {
	if i < 0 || i >= len(r.Index) {
		return nil, fmt.Errorf("hcrp: no chunk %d", i)
	}
	b, err := r.read(ctx, i, r.comp)
	if err != nil {
		return nil, err
	}
	r.comp = b
	r.raw, err = decompress(r.dec, b, &r.Index[i], i, r.raw)
	return r.raw, err
}

// decompress decodes one chunk frame into dst, bounded by and checked
// against the index's uncompressed length.
func decompress(dec *zstd.Decoder, src []byte, e *IndexEntry, i int, dst []byte) ([]byte, error) {
	if int64(len(src)) != int64(e.CompressedLen) {
		return dst, formats.Errorf(Name, e.Offset, "chunk %d: expected %d compressed bytes, got %d", i, e.CompressedLen, len(src))
	}
	var fh zstd.Header
	if err := fh.Decode(src); err != nil {
		return dst, &formats.Error{Format: Name, Offset: e.Offset, What: fmt.Sprintf("chunk %d: expected a zstd frame", i), Err: err}
	}
	if fh.HasFCS && fh.FrameContentSize != uint64(e.UncompressedLen) {
		return dst, formats.Errorf(Name, e.Offset, "chunk %d: zstd frame holds %d bytes, index says %d", i, fh.FrameContentSize, e.UncompressedLen)
	}
	if cap(dst) < int(e.UncompressedLen) {
		dst = make([]byte, 0, e.UncompressedLen)
	}
	out, err := dec.DecodeAll(src, dst[:0])
	if err != nil {
		return dst, &formats.Error{Format: Name, Offset: e.Offset, What: fmt.Sprintf("chunk %d: expected a zstd frame", i), Err: err}
	}
	if len(out) != int(e.UncompressedLen) {
		return out, formats.Errorf(Name, e.Offset, "chunk %d: expected %d bytes after decompression, got %d", i, e.UncompressedLen, len(out))
	}
	return out, nil
}

// findChunk returns the index entry holding tick (len(index) past the end).
func findChunk(index []IndexEntry, tick int64) int {
	return sort.Search(len(index), func(i int) bool { return index[i].EndTick() > tick })
}

// snapshotBefore returns the nearest chunk at or before i with a snapshot,
// or 0 when there is none.
func snapshotBefore(index []IndexEntry, i int) int {
	for j := min(i, len(index)-1); j >= 0; j-- {
		if index[j].Snapshot() {
			return j
		}
	}
	return 0
}

// scanner walks the events of one decompressed chunk.
type scanner struct {
	b     []byte
	p     int
	tick  int64 // tick of the current event
	ticks int   // ticks not yet started
	left  int   // events left in the current tick
	start int   // offset of the current event
	Event Event
	err   error
}

func (s *scanner) reset(b []byte, e *IndexEntry) {
	items := s.Event.Items
	*s = scanner{b: b, tick: int64(e.StartTick) - 1, ticks: int(e.Ticks)}
	s.Event.Items = items
}

// next advances to the next event, returning false at the end of the chunk
// or on an error (in s.err, with s.p at the failing byte).
func (s *scanner) next() bool {
	if s.err != nil {
		return false
	}
	for s.left == 0 {
		if s.ticks == 0 {
			if s.p != len(s.b) {
				s.err = fmt.Errorf("%d bytes after the chunk's last tick", len(s.b)-s.p)
			}
			return false
		}
		var err error
		// The stored tick number is ignored, as in the reference reader:
		// the tick is implied by the position in the chunk.
		if _, s.p, err = readVarInt(s.b, s.p); err != nil {
			s.err = fmt.Errorf("tick number: %w", err)
			return false
		}
		if s.p+2 > len(s.b) {
			s.err = fmt.Errorf("event count: %w", errShort)
			return false
		}
		n := int16(binary.BigEndian.Uint16(s.b[s.p:]))
		if n < 0 {
			s.err = fmt.Errorf("negative event count %d", n)
			return false
		}
		s.p += 2
		s.tick++
		s.ticks--
		s.left = int(n)
	}
	s.start = s.p
	p, err := decodeEvent(s.b, s.p, &s.Event)
	if err != nil {
		s.err = err
		return false
	}
	s.p = p
	s.left--
	return true
}

// chunkError reports where in a chunk's decompressed bytes decoding failed.
func chunkError(i int, e *IndexEntry, s *scanner) error {
	return &formats.Error{Format: Name, Offset: e.Offset,
		What: fmt.Sprintf("chunk %d, tick %d, decompressed byte %d", i, s.tick, s.start), Err: s.err}
}

// Events calls fn for every event of the ticks in rg, reading only the
// chunks that cover them. The Event is reused.
func (r *Reader) Events(ctx context.Context, rg formats.Range, fn func(tick int64, e *Event) error) error {
	rg = rg.Clamp(r.Ticks() - 1)
	if rg.Empty() {
		return nil
	}
	var s scanner
	for i := findChunk(r.Index, rg.From); i < len(r.Index) && !rg.Past(int64(r.Index[i].StartTick)); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := r.Chunk(ctx, i)
		if err != nil {
			return err
		}
		s.reset(raw, &r.Index[i])
		for s.next() {
			if rg.Past(s.tick) {
				return nil
			}
			if !rg.Contains(s.tick) {
				continue
			}
			if err := fn(s.tick, &s.Event); err != nil {
				return err
			}
		}
		if s.err != nil {
			return chunkError(i, &r.Index[i], &s)
		}
	}
	return nil
}

// Entity is one entity's state.
type Entity struct {
	ID       int32
	Type     int32
	Pos      Pos
	Velocity Vec3
	Pose     Pose
	State    uint8
	HeldSlot int32
}

// State is the world as rebuilt from a snapshot and the events after it.
type State struct {
	// Tick is the last tick applied (-1 before any).
	Tick     int64
	Entities map[int32]*Entity
	Blocks   map[BlockPos]int32
	// RunTime is the latest run time (ms) reported by a run event.
	RunTime int64
}

// NewState returns an empty state.
func NewState() *State {
	return &State{Tick: -1, Entities: map[int32]*Entity{}, Blocks: map[BlockPos]int32{}}
}

func (st *State) entity(id int32) *Entity {
	en := st.Entities[id]
	if en == nil {
		en = &Entity{ID: id}
		st.Entities[id] = en
	}
	return en
}

// Apply updates the state with one event.
func (st *State) Apply(e *Event) {
	switch e.Type {
	case DeltaMove:
		en := st.entity(e.Entity)
		en.Pos.X += e.Pos.X
		en.Pos.Y += e.Pos.Y
		en.Pos.Z += e.Pos.Z
		en.Pos.Yaw, en.Pos.Pitch = e.Pos.Yaw, e.Pos.Pitch
		en.Velocity = e.Velocity
	case AbsoluteMove:
		en := st.entity(e.Entity)
		en.Pos, en.Velocity = e.Pos, e.Velocity
	case SpawnEntity:
		en := st.entity(e.Entity)
		en.Type, en.Pos = e.EntityType, e.Pos
	case EntityState:
		en := st.entity(e.Entity)
		en.Pose, en.State = e.Pose, e.State
	case ChangeHeldSlot:
		st.entity(e.Entity).HeldSlot = e.Slot
	case DestroyEntity:
		delete(st.Entities, e.Entity)
	case SetBlock:
		st.Blocks[e.Block] = e.BlockState
	case RunStart:
		st.RunTime = 0
	case CheckpointReached, CheckpointReset, RunEnd:
		st.RunTime = e.RunTime
	}
}

// Seek returns the state at the end of tick: it decodes from the nearest
// snapshot chunk at or before the chunk holding tick.
func (r *Reader) Seek(ctx context.Context, tick int64) (*State, error) {
	if tick < 0 || tick >= r.Ticks() {
		return nil, fmt.Errorf("hcrp: seek to tick %d outside [0, %d)", tick, r.Ticks())
	}
	i := findChunk(r.Index, tick)
	s := snapshotBefore(r.Index, i)
	st := NewState()
	err := r.Events(ctx, formats.Ticks(int64(r.Index[s].StartTick), tick), func(t int64, e *Event) error {
		st.Apply(e)
		return nil
	})
	st.Tick = tick
	return st, err
}
