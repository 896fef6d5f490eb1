package chunkenc

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/klauspost/compress/zstd"
)

// A heads dictionary is raw zstd dictionary content: headers of one
// format, laid end to end, that a new recording's header is compressed
// against. The headers of one game server differ in a few fields (times,
// ids, a player count), so against a dictionary of its earlier headers a
// teehistorian header of about 3 KB takes about 290 bytes instead of 1.3 KB
// (60 of simgen's small files): on small recordings, a large part of what
// is stored.
//
// A frame made with a dictionary names it by id in its header, and a
// decoder must have been given that dictionary; the archive keeps every
// dictionary it ever made (they are small), so every heads record stays
// readable.

// Dictionary ids are those zstd leaves to private use: 32768 to 2^31-1.
const (
	minDictID = 1 << 15
	maxDictID = 1<<31 - 1
)

// DictID returns the id of dictionary content: derived from its sha256,
// so two archives (or two nodes) that build the same content give it the
// same id, and a stored dictionary whose content no longer matches its id
// is known to be damaged.
func DictID(content []byte) uint32 {
	sum := sha256.Sum256(content)
	return minDictID + binary.BigEndian.Uint32(sum[:4])%(maxDictID-minDictID+1)
}

// MaxDictBytes bounds a dictionary's content. Larger buys little (a format's
// headers are a few KB; the dictionary need hold only the distinct ones)
// and every encoder of it indexes the whole content once.
const MaxDictBytes = 32 << 10

// A HeadsTrainer builds a heads dictionary from headers offered newest
// first: a header joins the dictionary only when much of it is not in the
// dictionary yet (it is from a server, or a version, the dictionary has
// not seen), so a dictionary of one busy server's headers does not crowd
// out the others'.
type HeadsTrainer struct {
	content [][]byte // the headers taken, newest first
	size    int
	seen    map[uint64]struct{} // the 8-byte strings of the headers taken
	// Offered counts the headers offered; Taken those taken.
	Offered, Taken int
}

// novelShare: a header of whose 8-byte strings more than this share are
// not in the dictionary so far holds enough the dictionary lacks to be
// added. (Headers of one server share all but a few fields: their share
// is a few percent.)
const novelShare = 0.15

// Offer considers a header for the dictionary, and reports whether the
// dictionary is full (offering more is then pointless).
func (t *HeadsTrainer) Offer(header []byte) (full bool) {
	t.Offered++
	if len(header) < 64 || t.size+len(header) > MaxDictBytes {
		return t.size+64 > MaxDictBytes
	}
	if t.seen == nil {
		t.seen = map[uint64]struct{}{}
	}
	novel := 0
	for i := 0; i+8 <= len(header); i++ {
		if _, ok := t.seen[binary.LittleEndian.Uint64(header[i:])]; !ok {
			novel++
		}
	}
	if float64(novel) <= novelShare*float64(len(header)-7) {
		return false
	}
	for i := 0; i+8 <= len(header); i++ {
		t.seen[binary.LittleEndian.Uint64(header[i:])] = struct{}{}
	}
	t.content = append(t.content, bytes.Clone(header))
	t.size += len(header)
	t.Taken++
	return t.size+64 > MaxDictBytes
}

// Content returns the dictionary content: the taken headers oldest first,
// so the newest sit nearest the data, where zstd's offsets are cheapest.
func (t *HeadsTrainer) Content() []byte {
	out := make([]byte, 0, t.size)
	for i := len(t.content) - 1; i >= 0; i-- {
		out = append(out, t.content[i]...)
	}
	return out
}

// HeadsEncoderOptions configure the encoder of heads records with the
// raw dictionary content: zstd's fastest level. Every record starts from
// the dictionary's match tables again, which the default level's are 4
// times the size of (24 small DDNet files, their heads written twice when
// the first dictionary is trained: 5% of an ingest's time); against a
// dictionary of near-identical headers the levels differ by a few bytes.
func HeadsEncoderOptions(content []byte) []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(Window), zstd.WithLowerEncoderMem(true), zstd.WithEncoderDictRaw(DictID(content), content)}
}

// A Dict is a stored dictionary: its content and what it was made from.
type Dict struct {
	ID      uint32
	Format  string    // the format whose heads it compresses
	Created time.Time // when it was trained
	Headers int       // recordings of its format the archive held when it was trained
	Content []byte
	Stored  int // the record's size (DecodeDict)
}

// dictRecordVersion is the first byte of a dictionary record.
const dictRecordVersion = 1

// EncodeDict lays out a dictionary record: version (1 B) ‖ uvarint
// len(format) ‖ format ‖ uvarint created (Unix seconds) ‖ uvarint headers
// ‖ zstd(content), compressed by enc. Its key is the id (DictKey). The
// content is stored compressed: its headers are alike, and the dictionary
// is part of what the archive stores. The archive passes its own encoder
// (EncoderOptions): an encoder made for each record at the better level,
// its 4 MiB of match tables new each time, took 7% of a small ingest's
// time for the same bytes within a few dozen.
func EncodeDict(enc *zstd.Encoder, d Dict) []byte {
	out := []byte{dictRecordVersion}
	out = binary.AppendUvarint(out, uint64(len(d.Format)))
	out = append(out, d.Format...)
	out = binary.AppendUvarint(out, uint64(max(d.Created.Unix(), 0)))
	out = binary.AppendUvarint(out, uint64(d.Headers))
	return enc.EncodeAll(d.Content, out)
}

// DictKey is the catalog key of dictionary id.
func DictKey(id uint32) []byte { return binary.BigEndian.AppendUint32(nil, id) }

// DecodeDict reverses EncodeDict for the record under key, checking that
// the content is the one the key names.
func DecodeDict(key, rec []byte) (Dict, error) {
	if len(key) != 4 {
		return Dict{}, fmt.Errorf("dictionary key of %d bytes, want 4", len(key))
	}
	id := binary.BigEndian.Uint32(key)
	if len(rec) < 1 || rec[0] != dictRecordVersion {
		return Dict{}, fmt.Errorf("dictionary %d: unknown record version (written by a newer version?)", id)
	}
	r := VarintReader{B: rec, Off: 1}
	n := r.Uvarint("format length")
	if r.Err == nil && n > uint64(len(rec)-r.Off) {
		return Dict{}, fmt.Errorf("dictionary %d: format name of %d bytes at offset %d, record has %d", id, n, r.Off, len(rec))
	}
	if r.Err != nil {
		return Dict{}, fmt.Errorf("dictionary %d: %w", id, r.Err)
	}
	format := string(rec[r.Off : r.Off+int(n)])
	r.Off += int(n)
	created := r.Uvarint("creation time")
	headers := r.Uvarint("header count")
	if r.Err != nil {
		return Dict{}, fmt.Errorf("dictionary %d: %w", id, r.Err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxDictBytes))
	if err != nil {
		return Dict{}, err
	}
	defer dec.Close()
	content, err := dec.DecodeAll(rec[r.Off:], nil)
	if err != nil {
		return Dict{}, fmt.Errorf("dictionary %d: content: %w", id, err)
	}
	if len(content) < 8 || len(content) > MaxDictBytes {
		return Dict{}, fmt.Errorf("dictionary %d: %d bytes of content, want 8..%d", id, len(content), MaxDictBytes)
	}
	if DictID(content) != id {
		return Dict{}, fmt.Errorf("dictionary %d: content does not match its id (damaged)", id)
	}
	if created > 1<<40 || headers > 1<<31 {
		return Dict{}, fmt.Errorf("dictionary %d: creation time or header count out of range", id)
	}
	return Dict{ID: id, Format: format, Created: time.Unix(int64(created), 0).UTC(), Headers: int(headers), Content: content, Stored: len(rec)}, nil
}

// HeadsDictID returns the id of the dictionary a heads record was
// compressed with (its header's frame, or its trailer's when it has no
// header), 0 for none.
func HeadsDictID(rec []byte) (uint32, error) {
	n, k := binary.Uvarint(rec)
	if k <= 0 || n > uint64(len(rec)-k) {
		return 0, errors.New("corrupt heads record")
	}
	frame := rec[k : k+int(n)]
	if n == 0 {
		frame = rec[k:]
	}
	if len(frame) == 0 {
		return 0, nil
	}
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		return 0, fmt.Errorf("heads record: %w", err)
	}
	return h.DictionaryID, nil
}
