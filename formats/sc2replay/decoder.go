// This file decodes s2protocol's two encodings, versioned (details, header,
// tracker events) and bit-packed (initData, game and message events), into
// the same values s2prot produces (s2prot.Struct, int64, string, bool,
// s2prot.BitArr, []any, nil), following Blizzard's s2protocol decoders.
//
// Unlike s2prot, nothing is allocated from a length field before it is
// checked against the bytes left, and the number of values a blob may
// produce is bounded by its size (valuesPerByte), so a decode allocates at
// most a small multiple of its input whatever the input says.

package sc2replay

import (
	"errors"
	"fmt"

	"github.com/icza/s2prot"
)

// maxDecodeDepth bounds nesting of decoded values; real tables nest fewer
// than 20 levels.
const maxDecodeDepth = 64

// valuesPerByte bounds the values a blob may decode to: at most
// valuesPerByte per byte plus valuesSlack. Real replays stay below 1.6 (the
// densest are game events, see TestDecodeValueDensity); a value costs about
// 135 bytes of decoded maps, so this caps a decode at a few hundred times its
// input even where zero-bit types would let a forged array repeat for free.
const (
	valuesPerByte = 4
	valuesSlack   = 4096
)

// maxRootValues bounds the values of one root value (details, initData,
// one event) whatever the blob's size: about 70 MiB of decoded values. Real
// roots hold at most a few thousand (initData of a co-op lobby).
const maxRootValues = 1 << 19

// errDecode marks a decoder failure raised by fail and recovered by run.
type errDecode struct{ err error }

// dec holds the state both encodings share.
type dec struct {
	p        *protocol
	b        []byte
	idx      int   // next byte
	next     byte  // unread bits of the current byte (low bits first)
	nbits    uint8 // how many bits of next are unread
	values   int   // values left before the budget is spent
	rootLeft int   // values left for the current root value
}

func newDec(p *protocol, b []byte) *dec {
	return &dec{p: p, b: b, values: valuesPerByte*len(b) + valuesSlack, rootLeft: maxRootValues}
}

// root starts a new root value with a fresh maxRootValues.
func (d *dec) root() { d.rootLeft = maxRootValues }

// fail aborts the decode with an error naming the byte position.
func (d *dec) fail(format string, args ...any) {
	panic(errDecode{fmt.Errorf("at byte %d of %d: %s", d.idx, len(d.b), fmt.Sprintf(format, args...))})
}

// run calls f, turning a decoder failure into an error.
func (d *dec) run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(errDecode)
			if !ok {
				panic(r)
			}
			err = e.err
		}
	}()
	f()
	return nil
}

func (d *dec) done() bool    { return d.nbits == 0 && d.idx >= len(d.b) }
func (d *dec) byteAlign()    { d.nbits = 0 }
func (d *dec) leftBits() int { return (len(d.b)-d.idx)*8 + int(d.nbits) }

// spend counts one decoded value against the budget.
func (d *dec) spend(depth int) {
	d.values--
	d.rootLeft--
	if d.values < 0 {
		d.fail("more values than a %d-byte blob can hold (limit %d)", len(d.b), valuesPerByte*len(d.b)+valuesSlack)
	}
	if d.rootLeft < 0 {
		d.fail("one value made of more than %d values", maxRootValues)
	}
	if depth > maxDecodeDepth {
		d.fail("values nested deeper than %d", maxDecodeDepth)
	}
}

// readBits reads n <= 64 bits, big-endian (s2protocol's BitPackedBuffer).
func (d *dec) readBits(n uint8) uint64 {
	var v uint64
	for n > 0 {
		if d.nbits == 0 {
			if d.idx >= len(d.b) {
				d.fail("data cut short")
			}
			if n >= 8 {
				v = v<<8 | uint64(d.b[d.idx])
				d.idx++
				n -= 8
				continue
			}
			d.next, d.nbits = d.b[d.idx], 8
			d.idx++
		}
		c := min(n, d.nbits)
		v = v<<c | uint64(d.next&(1<<c-1))
		d.next >>= c
		d.nbits -= c
		n -= c
	}
	return v
}

// aligned returns the next n whole bytes after aligning, refusing lengths
// beyond the end before anything is allocated.
func (d *dec) aligned(n int64) []byte {
	d.byteAlign()
	if n < 0 || n > int64(len(d.b)-d.idx) {
		d.fail("%d bytes wanted, %d left", n, len(d.b)-d.idx)
	}
	s := d.b[d.idx : d.idx+int(n)]
	d.idx += int(n)
	return s
}

// unaligned reads n (small) bytes at the current bit position.
func (d *dec) unaligned(n int) []byte {
	if n*8 > d.leftBits() {
		d.fail("%d bytes wanted, %d bits left", n, d.leftBits())
	}
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(d.readBits(8))
	}
	return out
}

// bitPacked decodes with s2protocol's BitPackedDecoder rules.
type bitPacked struct{ *dec }

func (d bitPacked) instance(typeid, depth int) any {
	d.spend(depth)
	t := &d.p.types[typeid]
	switch t.kind {
	case kInt:
		return t.offset + int64(d.readBits(t.bits))
	case kStruct:
		return d.structure(t, depth)
	case kChoice:
		tag := t.offset + int64(d.readBits(t.bits))
		f := t.choice(tag)
		if f == nil {
			d.fail("choice tag %d not in the table", tag)
		}
		return s2prot.Struct{f.name: d.instance(f.typeid, depth+1)}
	case kArray:
		n := t.offset + int64(d.readBits(t.bits))
		if mb := int64(d.p.minBits[t.elem]); n < 0 || mb > 0 && n > int64(d.leftBits())/mb {
			d.fail("array of %d elements in %d bits", n, d.leftBits())
		}
		arr := make([]any, 0, min(n, int64(d.leftBits())+1))
		for range n {
			arr = append(arr, d.instance(t.elem, depth+1))
		}
		return arr
	case kBitArray:
		n := t.offset + int64(d.readBits(t.bits))
		if n < 0 || n > int64(d.leftBits()) {
			d.fail("bit array of %d bits in %d bits", n, d.leftBits())
		}
		buf := d.unaligned(int(n / 8))
		if r := uint8(n % 8); r != 0 {
			buf = append(buf, byte(d.readBits(r)))
		}
		return s2prot.BitArr{Count: int(n), Data: buf}
	case kBlob:
		n := t.offset + int64(d.readBits(t.bits))
		return string(d.aligned(n))
	case kOptional:
		if d.readBits(1) != 0 {
			return d.instance(t.elem, depth+1)
		}
		return nil
	case kBool:
		return d.readBits(1) != 0
	case kFourCC:
		return string(d.unaligned(4))
	}
	return nil
}

// structure decodes every field in table order, merging __parent fields as
// s2protocol and s2prot do.
func (d bitPacked) structure(t *typeInfo, depth int) any {
	s := make(s2prot.Struct, len(t.fields))
	for i := range t.fields {
		f := &t.fields[i]
		v := d.instance(f.typeid, depth+1)
		if f.parent {
			if r, whole := mergeParent(s, v, len(t.fields)); whole {
				return r
			}
			continue
		}
		s[f.name] = v
	}
	return s
}

// mergeParent merges a __parent value into s. When the struct has that one
// field and it is not a struct, the value itself is the struct's value:
// mergeParent returns it with whole set.
func mergeParent(s s2prot.Struct, v any, nfields int) (value any, whole bool) {
	if ps, ok := v.(s2prot.Struct); ok {
		for k, x := range ps {
			s[k] = x
		}
		return nil, false
	}
	if nfields == 1 {
		return v, true
	}
	s["__parent"] = v
	return nil, false
}

// choice returns the alternative with the given tag, or nil.
func (t *typeInfo) choice(tag int64) *field {
	for i := range t.fields {
		if t.fields[i].tag == tag {
			return &t.fields[i]
		}
	}
	return nil
}

// minBitsOf is the fewest bits a bit-packed value of the type can take.
func (p *protocol) minBitsOf(typeid, depth int) int {
	if depth > maxDecodeDepth {
		return 0
	}
	t := &p.types[typeid]
	switch t.kind {
	case kInt, kChoice, kArray, kBitArray, kBlob:
		return int(t.bits)
	case kOptional, kBool:
		return 1
	case kFourCC:
		return 32
	case kStruct:
		n := 0
		for _, f := range t.fields {
			n += p.minBitsOf(f.typeid, depth+1)
		}
		return n
	}
	return 0
}

// versioned decodes with s2protocol's VersionedDecoder rules: every value
// starts with a byte naming its kind, which must match the table.
type versioned struct{ *dec }

// versioned kind bytes.
const (
	vArray = iota
	vBitArray
	vBlob
	vChoice
	vOptional
	vStruct
	vU8
	vU32
	vU64
	vInt
)

func (d versioned) byte1() byte {
	if d.idx >= len(d.b) {
		d.fail("data cut short")
	}
	c := d.b[d.idx]
	d.idx++
	return c
}

func (d versioned) expect(k byte) {
	if c := d.byte1(); c != k {
		d.fail("value of kind %d where the table expects kind %d", c, k)
	}
}

// vint reads s2protocol's variable-length integer: sign in bit 0 and six
// value bits in the first byte, seven in each further byte.
func (d versioned) vint() int64 {
	c := d.byte1()
	neg := c&1 != 0
	v := uint64(c>>1) & 0x3f
	for shift := uint(6); c&0x80 != 0; shift += 7 {
		if shift > 63 {
			d.fail("variable-length integer longer than 64 bits")
		}
		c = d.byte1()
		v |= uint64(c&0x7f) << shift
	}
	if neg {
		return -int64(v)
	}
	return int64(v)
}

func (d versioned) instance(typeid, depth int) any {
	d.spend(depth)
	t := &d.p.types[typeid]
	switch t.kind {
	case kInt:
		d.expect(vInt)
		return d.vint()
	case kStruct:
		d.expect(vStruct)
		return d.structure(t, depth)
	case kChoice:
		d.expect(vChoice)
		tag := d.vint()
		f := t.choice(tag)
		if f == nil {
			d.skip(depth + 1)
			return s2prot.Struct{}
		}
		return s2prot.Struct{f.name: d.instance(f.typeid, depth+1)}
	case kArray:
		d.expect(vArray)
		n := d.vint()
		if left := int64(len(d.b) - d.idx); n < 0 || n > left {
			d.fail("array of %d elements in %d bytes", n, left)
		}
		arr := make([]any, 0, n)
		for range n {
			arr = append(arr, d.instance(t.elem, depth+1))
		}
		return arr
	case kBitArray:
		d.expect(vBitArray)
		n := d.vint()
		if n < 0 || n > int64(len(d.b)-d.idx)*8 {
			d.fail("bit array of %d bits in %d bytes", n, len(d.b)-d.idx)
		}
		return s2prot.BitArr{Count: int(n), Data: append([]byte(nil), d.aligned((n+7)/8)...)}
	case kBlob:
		d.expect(vBlob)
		return string(d.aligned(d.vint()))
	case kOptional:
		d.expect(vOptional)
		if d.byte1() != 0 {
			return d.instance(t.elem, depth+1)
		}
		return nil
	case kBool:
		d.expect(vU8)
		return d.byte1() != 0
	case kFourCC:
		d.expect(vU32)
		return string(d.aligned(4))
	}
	return nil
}

// structure decodes the fields present (tag, value), skipping tags the
// table does not know, as s2protocol does.
func (d versioned) structure(t *typeInfo, depth int) any {
	n := d.vint()
	if left := int64(len(d.b) - d.idx); n < 0 || n > left {
		d.fail("struct of %d fields in %d bytes", n, left)
	}
	s := make(s2prot.Struct, min(int(n), len(t.fields)))
	for range n {
		tag := d.vint()
		var f *field
		for i := range t.fields {
			if t.fields[i].tag == tag {
				f = &t.fields[i]
				break
			}
		}
		if f == nil {
			d.skip(depth + 1)
			continue
		}
		v := d.instance(f.typeid, depth+1)
		if f.parent {
			if r, whole := mergeParent(s, v, len(t.fields)); whole {
				return r
			}
			continue
		}
		s[f.name] = v
	}
	return s
}

// skip passes over one value of any kind without keeping it.
func (d versioned) skip(depth int) {
	d.spend(depth)
	switch k := d.byte1(); k {
	case vArray:
		n := d.vint()
		if n < 0 || n > int64(len(d.b)-d.idx) {
			d.fail("array of %d elements in %d bytes", n, len(d.b)-d.idx)
		}
		for range n {
			d.skip(depth + 1)
		}
	case vBitArray:
		n := d.vint()
		if n < 0 {
			d.fail("bit array of %d bits", n)
		}
		d.aligned((n + 7) / 8)
	case vBlob:
		d.aligned(d.vint())
	case vChoice:
		d.vint()
		d.skip(depth + 1)
	case vOptional:
		if d.byte1() != 0 {
			d.skip(depth + 1)
		}
	case vStruct:
		n := d.vint()
		if n < 0 || n > int64(len(d.b)-d.idx) {
			d.fail("struct of %d fields in %d bytes", n, len(d.b)-d.idx)
		}
		for range n {
			d.vint()
			d.skip(depth + 1)
		}
	case vU8:
		d.aligned(1)
	case vU32:
		d.aligned(4)
	case vU64:
		d.aligned(8)
	case vInt:
		d.vint()
	default:
		d.fail("unknown value kind %d", k)
	}
}

// errNotStruct is returned when a root value does not decode to a struct.
var errNotStruct = errors.New("did not decode to a struct")

// decodeVersioned decodes the versioned value of type typeid at the start
// of b and returns it with the bytes it used.
func decodeVersioned(p *protocol, b []byte, typeid int) (s2prot.Struct, int, error) {
	d := versioned{newDec(p, b)}
	var v any
	err := d.run(func() { v = d.instance(typeid, 0) })
	return rootStruct(v, d.idx, err)
}

// rootStruct returns a root value decoded from the first n bytes as the
// struct it must be.
func rootStruct(v any, n int, err error) (s2prot.Struct, int, error) {
	if err != nil {
		return nil, n, err
	}
	s, ok := v.(s2prot.Struct)
	if !ok {
		return nil, n, errNotStruct
	}
	return s, n, nil
}

// decodeBitPacked decodes the bit-packed value of type typeid at the start
// of b and returns it with the bytes it used (a partial byte counts).
func decodeBitPacked(p *protocol, b []byte, typeid int) (s2prot.Struct, int, error) {
	d := bitPacked{newDec(p, b)}
	var v any
	err := d.run(func() { v = d.instance(typeid, 0) })
	return rootStruct(v, d.idx, err)
}

// eventStream names what decodeEvents needs to know about one stream.
type eventStream struct {
	types     map[int64]evType
	idType    int
	versioned bool // tracker events; game and message events are bit-packed
	userID    bool // game and message events carry a user id
}

// stream returns the description of the named inner file's events.
func (p *protocol) stream(name string) (eventStream, bool) {
	switch name {
	case fileGameEvents:
		return eventStream{types: p.game, idType: p.gameEventID, userID: true}, true
	case fileMessageEvents:
		return eventStream{types: p.message, idType: p.messageEventID, userID: true}, true
	case fileTrackerEvents:
		return eventStream{types: p.tracker, idType: p.trackerEventID, versioned: true}, p.tracker != nil
	}
	return eventStream{}, false
}

// eventIter decodes an event stream one event at a time, as s2protocol's
// _decode_event_stream does, into s2prot.Events with "id", "evtTypeName",
// "loop" and (game and message events) "userid" added as s2prot adds them.
// Only the current event is held, so memory does not grow with the stream.
type eventIter struct {
	d    *dec
	es   eventStream
	inst func(typeid int) any
	loop int64
	err  error
	n    int // events decoded
}

func newEventIter(p *protocol, b []byte, es eventStream) *eventIter {
	it := &eventIter{d: newDec(p, b), es: es}
	if es.versioned {
		v := versioned{it.d}
		it.inst = func(typeid int) any { return v.instance(typeid, 0) }
	} else {
		v := bitPacked{it.d}
		it.inst = func(typeid int) any { return v.instance(typeid, 0) }
	}
	return it
}

// next decodes the next event; false at the end of the stream or on an
// error, which err then holds (naming the event it stopped at).
func (it *eventIter) next() (s2prot.Event, bool) {
	if it.err != nil || it.d.done() {
		return s2prot.Event{}, false
	}
	var e s2prot.Event
	if err := it.d.run(func() { e = it.decode() }); err != nil {
		it.err = fmt.Errorf("event %d: %w", it.n, err)
		return s2prot.Event{}, false
	}
	it.n++
	return e, true
}

// decode reads one event; it fails through d.fail.
func (it *eventIter) decode() s2prot.Event {
	d, p := it.d, it.d.p
	d.root()
	start := d.idx
	delta, ok := it.inst(p.svarUint32).(s2prot.Struct)
	if !ok || len(delta) != 1 {
		d.fail("expected a game loop delta")
	}
	for _, v := range delta {
		n, ok := v.(int64)
		if !ok {
			d.fail("expected an integer game loop delta")
		}
		it.loop += n
	}
	var user any
	if it.es.userID {
		user = it.inst(p.userID)
	}
	id, ok := it.inst(it.es.idType).(int64)
	if !ok {
		d.fail("expected an event id")
	}
	et, ok := it.es.types[id]
	if !ok {
		d.fail("event id %d not in the table", id)
	}
	s, ok := it.inst(et.typeid).(s2prot.Struct)
	if !ok {
		d.fail("event %s did not decode to a struct", et.et.Name)
	}
	s["id"], s["evtTypeName"], s["loop"] = id, et.et.Name, it.loop
	if it.es.userID {
		s["userid"] = user
	}
	d.byteAlign()
	if d.idx == start {
		d.fail("event used no bytes")
	}
	return s2prot.Event{Struct: s, EvtType: et.et}
}

// decodeEvents decodes a whole event stream. On failure the events before
// it come back with the error.
func decodeEvents(p *protocol, b []byte, es eventStream) ([]s2prot.Event, error) {
	it := newEventIter(p, b, es)
	var evs []s2prot.Event
	for {
		e, ok := it.next()
		if !ok {
			return evs, it.err
		}
		evs = append(evs, e)
	}
}
