package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The bbolt store keeps each entry and change in one value:
//
//	format (1) | flags (1: bit 0 deleted) | seq (8, big-endian) |
//	at (8, big-endian Unix microseconds) |
//	kind, key, node, value (each a uvarint length and the bytes)
//
// and each lease as format (1) | until (8, Unix nanoseconds) | holder.
// Decoding checks every length against what remains and against the limits
// in check.go, so corrupt bytes give an error, never a panic or an
// allocation larger than the input.
const (
	entryFormat   = 1
	leaseFormat   = 1
	flagDeleted   = 1
	entryFixedLen = 1 + 1 + 8 + 8
	leaseFixedLen = 1 + 8
)

// encodeEntry returns e's stored form.
func encodeEntry(e Entry) []byte {
	b := make([]byte, entryFixedLen, entryFixedLen+4*binary.MaxVarintLen32+len(e.Kind)+len(e.Key)+len(e.Node)+len(e.Value))
	b[0] = entryFormat
	if e.Deleted {
		b[1] = flagDeleted
	}
	binary.BigEndian.PutUint64(b[2:], uint64(e.Seq))
	binary.BigEndian.PutUint64(b[10:], uint64(e.At.UnixMicro()))
	for _, s := range []string{string(e.Kind), e.Key, e.Node} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Value)))
	return append(b, e.Value...)
}

// decodeEntry parses what encodeEntry wrote. The entry's strings and value
// are copies: b may be memory that bbolt reuses.
func decodeEntry(b []byte) (Entry, error) {
	if len(b) < entryFixedLen {
		return Entry{}, fmt.Errorf("corrupt entry: %d bytes, fewer than %d", len(b), entryFixedLen)
	}
	if b[0] != entryFormat {
		return Entry{}, fmt.Errorf("corrupt entry: format %d, this build reads %d", b[0], entryFormat)
	}
	if b[1]&^flagDeleted != 0 {
		return Entry{}, fmt.Errorf("corrupt entry: unknown flags %#x", b[1])
	}
	e := Entry{
		Deleted: b[1]&flagDeleted != 0,
		Seq:     int64(binary.BigEndian.Uint64(b[2:])),
		At:      time.UnixMicro(int64(binary.BigEndian.Uint64(b[10:]))).UTC(),
	}
	if e.Seq <= 0 {
		return Entry{}, fmt.Errorf("corrupt entry: sequence %d", e.Seq)
	}
	rest := b[entryFixedLen:]
	var fields [4][]byte
	limits := [4]int{maxKindLen, maxKeyLen, maxNodeLen, maxValueLen}
	names := [4]string{"kind", "key", "node", "value"}
	for i := range fields {
		n, size := binary.Uvarint(rest)
		if size <= 0 {
			return Entry{}, fmt.Errorf("corrupt entry: bad %s length", names[i])
		}
		rest = rest[size:]
		if n > uint64(limits[i]) || n > uint64(len(rest)) {
			return Entry{}, fmt.Errorf("corrupt entry: %s length %d, with %d bytes left and at most %d allowed", names[i], n, len(rest), limits[i])
		}
		fields[i], rest = rest[:n], rest[n:]
	}
	if len(rest) != 0 {
		return Entry{}, fmt.Errorf("corrupt entry: %d bytes after the value", len(rest))
	}
	e.Kind, e.Key, e.Node = Kind(fields[0]), string(fields[1]), string(fields[2])
	if err := checkWrite(e.Kind, e.Key, nil, e.Node); err != nil {
		return Entry{}, fmt.Errorf("corrupt entry: %w", err)
	}
	switch {
	case e.Deleted && len(fields[3]) > 0:
		return Entry{}, errors.New("corrupt entry: a deletion with a value")
	case !e.Deleted:
		e.Value = append([]byte{}, fields[3]...)
	}
	return e, nil
}

// lease is a stored lease: who has it until when.
type lease struct {
	holder string
	until  time.Time
}

// encodeLease returns l's stored form.
func encodeLease(l lease) []byte {
	b := make([]byte, leaseFixedLen, leaseFixedLen+len(l.holder))
	b[0] = leaseFormat
	binary.BigEndian.PutUint64(b[1:], uint64(l.until.UnixNano()))
	return append(b, l.holder...)
}

// decodeLease parses what encodeLease wrote.
func decodeLease(b []byte) (lease, error) {
	if len(b) < leaseFixedLen {
		return lease{}, fmt.Errorf("corrupt lease: %d bytes, fewer than %d", len(b), leaseFixedLen)
	}
	if b[0] != leaseFormat {
		return lease{}, fmt.Errorf("corrupt lease: format %d, this build reads %d", b[0], leaseFormat)
	}
	l := lease{
		until:  time.Unix(0, int64(binary.BigEndian.Uint64(b[1:]))),
		holder: string(b[leaseFixedLen:]),
	}
	if err := checkText("holder", l.holder, maxNodeLen, false); err != nil {
		return lease{}, fmt.Errorf("corrupt lease: %w", err)
	}
	return l, nil
}
