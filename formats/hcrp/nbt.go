// This file handles the metadata blob: Java network NBT (a tag type byte,
// then the root compound's payload with no name). Encoding and decoding of
// the known keys go through github.com/Tnze/go-mc/nbt in network format; a
// small bounds-checking walker here validates untrusted bytes first (go-mc
// allocates list and array lengths as read and recurses without a depth
// limit), lists the root's entries for Attrs, and merges extra metadata.

package hcrp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/Tnze/go-mc/nbt"
)

// NBT tag types.
const (
	tagEnd byte = iota
	tagByte
	tagShort
	tagInt
	tagLong
	tagFloat
	tagDouble
	tagByteArray
	tagString
	tagList
	tagCompound
	tagIntArray
	tagLongArray
)

// maxNBTDepth is the nesting limit of the reference NBT reader.
const maxNBTDepth = 512

// Meta is the metadata layout this package writes and understands. Other
// keys in a file's metadata are kept as they are (and scalar ones reported
// as Attrs).
type Meta struct {
	// Map is the map or world name.
	Map string `nbt:"map,omitempty"`
	// Server names the server that recorded.
	Server string `nbt:"server,omitempty"`
	// Players lists who is in the recording and their replay entity ids.
	Players []MetaPlayer `nbt:"players,omitempty"`
	// Anticheat holds the anticheat flags raised during the recording.
	Anticheat []Flag `nbt:"anticheat,omitempty"`
	// Chat holds chat lines (the reference has no chat event; a host that
	// wants chat searchable puts it here).
	Chat []ChatLine `nbt:"chat,omitempty"`
}

// ChatLine is one entry of Meta.Chat.
type ChatLine struct {
	Tick   int32  `nbt:"tick"`
	Player string `nbt:"player"` // UUID
	Text   string `nbt:"text"`
}

// MetaPlayer is one entry of Meta.Players.
type MetaPlayer struct {
	UUID   string `nbt:"uuid"`
	Name   string `nbt:"name"`
	Entity int32  `nbt:"entity"` // replay-local entity id
}

// Flag is one anticheat flag: its check type, the tick it was raised at, the
// player's UUID and a free-form detail.
type Flag struct {
	Type   string `nbt:"type"`
	Tick   int32  `nbt:"tick"`
	Player string `nbt:"player"`
	Detail string `nbt:"detail"`
}

// EncodeMeta returns m as network NBT. A nil or empty Meta is the empty
// compound 0A 00.
func EncodeMeta(m *Meta) ([]byte, error) {
	if m == nil {
		m = &Meta{}
	}
	return encodeNBT(m)
}

// encodeNBT encodes v (a struct or map) as a nameless network compound.
func encodeNBT(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := nbt.NewEncoder(&buf)
	enc.NetworkFormat(true)
	if err := enc.Encode(v, ""); err != nil {
		return nil, fmt.Errorf("hcrp: encode metadata: %w", err)
	}
	b := buf.Bytes()
	if len(b) < 2 || b[0] != tagCompound {
		return nil, fmt.Errorf("hcrp: metadata of type %T is not an NBT compound", v)
	}
	return b, nil
}

// DecodeMeta validates b as a network NBT compound and decodes the keys of
// Meta from it.
func DecodeMeta(b []byte) (*Meta, error) {
	if err := checkCompound(b); err != nil {
		return nil, err
	}
	m := &Meta{}
	dec := nbt.NewDecoder(bytes.NewReader(b))
	dec.NetworkFormat(true)
	if _, err := dec.Decode(m); err != nil {
		return m, fmt.Errorf("metadata keys: %w", err)
	}
	return m, nil
}

// checkCompound checks that b is exactly one network NBT compound.
func checkCompound(b []byte) error {
	if len(b) < 1 || b[0] != tagCompound {
		return fmt.Errorf("metadata: expected NBT compound tag type 10")
	}
	end, err := skipPayload(b, 1, tagCompound, 0)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if end != len(b) {
		return fmt.Errorf("metadata: %d bytes after the root compound", len(b)-end)
	}
	return nil
}

// skipPayload returns the offset after the payload of a tag of type t that
// starts at b[p:], checking every length against the bytes that remain.
func skipPayload(b []byte, p int, t byte, depth int) (int, error) {
	if depth > maxNBTDepth {
		return p, fmt.Errorf("NBT nested deeper than %d", maxNBTDepth)
	}
	need := func(n int64) error {
		if n < 0 || n > int64(len(b)-p) {
			return fmt.Errorf("NBT at %d: %d bytes needed, %d left", p, n, len(b)-p)
		}
		return nil
	}
	size := [...]int64{tagByte: 1, tagShort: 2, tagInt: 4, tagLong: 8, tagFloat: 4, tagDouble: 8}
	switch t {
	case tagByte, tagShort, tagInt, tagLong, tagFloat, tagDouble:
		if err := need(size[t]); err != nil {
			return p, err
		}
		return p + int(size[t]), nil
	case tagByteArray, tagIntArray, tagLongArray:
		if err := need(4); err != nil {
			return p, err
		}
		n := int64(int32(binary.BigEndian.Uint32(b[p:])))
		p += 4
		elem := int64(1)
		if t == tagIntArray {
			elem = 4
		} else if t == tagLongArray {
			elem = 8
		}
		if n < 0 {
			return p, fmt.Errorf("NBT array at %d: negative length %d", p-4, n)
		}
		if err := need(n * elem); err != nil {
			return p, err
		}
		return p + int(n*elem), nil
	case tagString:
		if err := need(2); err != nil {
			return p, err
		}
		n := int64(binary.BigEndian.Uint16(b[p:]))
		p += 2
		if err := need(n); err != nil {
			return p, err
		}
		return p + int(n), nil
	case tagList:
		if err := need(5); err != nil {
			return p, err
		}
		et := b[p]
		n := int64(int32(binary.BigEndian.Uint32(b[p+1:])))
		p += 5
		if n < 0 || et > tagLongArray || (et == tagEnd && n > 0) {
			return p, fmt.Errorf("NBT list at %d: %d elements of tag type %d", p-5, n, et)
		}
		if err := need(n); err != nil { // every element takes at least a byte
			return p, err
		}
		var err error
		for i := int64(0); i < n; i++ {
			if p, err = skipPayload(b, p, et, depth+1); err != nil {
				return p, err
			}
		}
		return p, nil
	case tagCompound:
		for {
			if err := need(1); err != nil {
				return p, err
			}
			ct := b[p]
			p++
			if ct == tagEnd {
				return p, nil
			}
			if ct > tagLongArray {
				return p, fmt.Errorf("NBT at %d: unknown tag type %d", p-1, ct)
			}
			var err error
			if p, err = skipPayload(b, p, tagString, depth); err != nil { // the name
				return p, err
			}
			if p, err = skipPayload(b, p, ct, depth+1); err != nil {
				return p, err
			}
		}
	}
	return p, fmt.Errorf("NBT at %d: unknown tag type %d", p, t)
}

// nbtEntry is one named tag of the root compound: b[start:end] is the whole
// tag (type, name, payload).
type nbtEntry struct {
	Name       string
	Type       byte
	Start, End int
}

// rootEntries lists the root compound's tags; b must have passed
// checkCompound.
func rootEntries(b []byte) []nbtEntry {
	var out []nbtEntry
	p := 1
	for p < len(b) && b[p] != tagEnd {
		start, t := p, b[p]
		n := int(binary.BigEndian.Uint16(b[p+1:]))
		name := string(b[p+3 : p+3+n])
		end, err := skipPayload(b, p+3+n, t, 1)
		if err != nil {
			break
		}
		out = append(out, nbtEntry{Name: name, Type: t, Start: start, End: end})
		p = end
	}
	return out
}

// scalar returns a root entry's value as text when it is a number or string.
func (e nbtEntry) scalar(b []byte) (string, bool) {
	v := b[e.Start+3+len(e.Name) : e.End]
	switch e.Type {
	case tagByte:
		return fmt.Sprint(int8(v[0])), true
	case tagShort:
		return fmt.Sprint(int16(binary.BigEndian.Uint16(v))), true
	case tagInt:
		return fmt.Sprint(int32(binary.BigEndian.Uint32(v))), true
	case tagLong:
		return fmt.Sprint(int64(binary.BigEndian.Uint64(v))), true
	case tagFloat:
		return fmt.Sprint(math.Float32frombits(binary.BigEndian.Uint32(v))), true
	case tagDouble:
		return fmt.Sprint(math.Float64frombits(binary.BigEndian.Uint64(v))), true
	case tagString:
		return string(v[2:]), true
	}
	return "", false
}

// MergeMeta returns the metadata compound orig with the root entries of
// extra added; an entry of extra replaces one of orig with the same name.
// Both must be network NBT compounds. Order is kept: orig's surviving
// entries, then extra's.
func MergeMeta(orig, extra []byte) ([]byte, error) { return mergeMeta(orig, extra) }

// mergeMeta is MergeMeta that also drops the root entries named in drop.
func mergeMeta(orig, extra []byte, drop ...string) ([]byte, error) {
	if err := checkCompound(orig); err != nil {
		return nil, err
	}
	if err := checkCompound(extra); err != nil {
		return nil, fmt.Errorf("extra %w", err)
	}
	ex := rootEntries(extra)
	names := make(map[string]bool, len(ex)+len(drop))
	for _, n := range drop {
		names[n] = true
	}
	for _, e := range ex {
		names[e.Name] = true
	}
	out := []byte{tagCompound}
	for _, e := range rootEntries(orig) {
		if !names[e.Name] {
			out = append(out, orig[e.Start:e.End]...)
		}
	}
	out = append(out, extra[1:len(extra)-1]...)
	return append(out, tagEnd), nil
}

// shiftMeta keeps the anticheat flags and chat lines of ticks [first, end)
// and renumbers them from first, for a clip or a ring save. Other keys are
// kept as they are.
func shiftMeta(meta []byte, first, end int64) ([]byte, error) {
	m, err := DecodeMeta(meta)
	if err != nil || (len(m.Anticheat) == 0 && len(m.Chat) == 0) {
		return meta, nil // nothing this package understands to shift
	}
	var kept Meta
	for _, f := range m.Anticheat {
		if int64(f.Tick) >= first && int64(f.Tick) < end {
			f.Tick -= int32(first)
			kept.Anticheat = append(kept.Anticheat, f)
		}
	}
	for _, c := range m.Chat {
		if int64(c.Tick) >= first && int64(c.Tick) < end {
			c.Tick -= int32(first)
			kept.Chat = append(kept.Chat, c)
		}
	}
	extra, err := EncodeMeta(&kept)
	if err != nil {
		return nil, err
	}
	return mergeMeta(meta, extra, "anticheat", "chat")
}
