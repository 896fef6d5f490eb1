// This file decodes and encodes the protobuf backend (VTXP) at the wire
// level with protowire, by the field numbers of the SDK's vtx_schema.proto
// (package cppvtx). Known fields with the wrong wire type are errors;
// unknown fields are skipped. Repeated scalars are accepted packed or not.

package vtx

import (
	"bytes"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxDepth bounds the nesting of property containers (structs in structs,
// maps of structs) and so the decoder's recursion.
const maxDepth = 64

// msgError is a decode error at a byte position of a decoded message.
type msgError struct {
	pos  int
	what string
}

func (e *msgError) Error() string { return fmt.Sprintf("byte %d of the message: %s", e.pos, e.what) }

// pbDec decodes protobuf messages that are all subslices of root, so a
// slice's position in root is cap(root)-cap(slice).
type pbDec struct {
	root  []byte
	depth int
	arena
}

func newPbDec(b []byte) *pbDec {
	d := &pbDec{root: b}
	d.raw = b
	return d
}

func (d *pbDec) errAt(b []byte, format string, args ...any) error {
	return &msgError{pos: cap(d.root) - cap(b), what: fmt.Sprintf(format, args...)}
}

// pbField is one decoded field: x for varint and fixed types, b for bytes.
type pbField struct {
	num protowire.Number
	typ protowire.Type
	x   uint64
	b   []byte
	at  []byte // the field's bytes from its tag on, for error positions
}

// pbIter walks the fields of one message.
type pbIter struct {
	d   *pbDec
	b   []byte
	f   pbField
	err error
}

func (d *pbDec) iter(b []byte) pbIter { return pbIter{d: d, b: b} }

func (it *pbIter) next() bool {
	if it.err != nil || len(it.b) == 0 {
		return false
	}
	b := it.b
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		it.err = it.d.errAt(b, "expected a field tag: %v", protowire.ParseError(n))
		return false
	}
	it.f = pbField{num: num, typ: typ, at: b}
	rest := b[n:]
	var m int
	switch typ {
	case protowire.VarintType:
		it.f.x, m = protowire.ConsumeVarint(rest)
	case protowire.Fixed32Type:
		var v uint32
		v, m = protowire.ConsumeFixed32(rest)
		it.f.x = uint64(v)
	case protowire.Fixed64Type:
		it.f.x, m = protowire.ConsumeFixed64(rest)
	case protowire.BytesType:
		it.f.b, m = protowire.ConsumeBytes(rest)
	case protowire.StartGroupType:
		m = protowire.ConsumeFieldValue(num, typ, rest)
	default:
		it.err = it.d.errAt(b, "field %d has invalid wire type %d", num, typ)
		return false
	}
	if m < 0 {
		it.err = it.d.errAt(b, "field %d: %v", num, protowire.ParseError(m))
		return false
	}
	it.b = rest[m:]
	return true
}

// count returns how many length-delimited fields numbered a and b the
// message holds, so repeated fields can be allocated once. Malformed input
// stops the count; the decoding pass reports it.
func (d *pbDec) count(msg []byte, a, b protowire.Number) (na, nb int) {
	it := d.iter(msg)
	for it.next() {
		if it.f.typ != protowire.BytesType {
			continue
		}
		switch it.f.num {
		case a:
			na++
		case b:
			nb++
		}
	}
	return na, nb
}

func (d *pbDec) wantType(f *pbField, t protowire.Type) error {
	if f.typ != t {
		return d.errAt(f.at, "field %d has wire type %d, expected %d", f.num, f.typ, t)
	}
	return nil
}

func (d *pbDec) varint(f *pbField) (uint64, error) {
	return f.x, d.wantType(f, protowire.VarintType)
}

func (d *pbDec) fixed32(f *pbField) (uint32, error) {
	return uint32(f.x), d.wantType(f, protowire.Fixed32Type)
}

func (d *pbDec) fixed64(f *pbField) (uint64, error) {
	return f.x, d.wantType(f, protowire.Fixed64Type)
}

func (d *pbDec) bytes(f *pbField) ([]byte, error) {
	return f.b, d.wantType(f, protowire.BytesType)
}

func (d *pbDec) str(f *pbField) (string, error) {
	b, err := d.bytes(f)
	if err != nil || len(b) == 0 {
		return "", err
	}
	return d.substr(cap(d.root)-cap(b), len(b)), nil
}

// varints appends a repeated varint field, packed or not, through conv.
func pbVarints[T any](d *pbDec, dst []T, f *pbField, conv func(uint64) T) ([]T, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, conv(f.x)), nil
	case protowire.BytesType:
		b := f.b
		if dst == nil && len(b) > 0 {
			n := 0
			for _, c := range b {
				if c < 0x80 {
					n++ // each varint ends with a byte below 0x80
				}
			}
			dst = take[T](&d.arena, n)
		}
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return dst, d.errAt(b, "packed field %d: %v", f.num, protowire.ParseError(n))
			}
			dst = append(dst, conv(v))
			b = b[n:]
		}
		return dst, nil
	}
	return dst, d.errAt(f.at, "field %d has wire type %d, expected a varint", f.num, f.typ)
}

// pbFixed32s appends a repeated 4-byte field, packed or not, through conv.
func pbFixed32s[T any](d *pbDec, dst []T, f *pbField, conv func(uint32) T) ([]T, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, conv(uint32(f.x))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return dst, d.errAt(f.at, "packed field %d: %d bytes is not a multiple of 4", f.num, len(f.b))
		}
		if dst == nil && len(f.b) > 0 {
			dst = take[T](&d.arena, len(f.b)/4)
		}
		for b := f.b; len(b) >= 4; b = b[4:] {
			dst = append(dst, conv(le32(b)))
		}
		return dst, nil
	}
	return dst, d.errAt(f.at, "field %d has wire type %d, expected fixed32", f.num, f.typ)
}

// pbFixed64s appends a repeated 8-byte field, packed or not, through conv.
func pbFixed64s[T any](d *pbDec, dst []T, f *pbField, conv func(uint64) T) ([]T, error) {
	switch f.typ {
	case protowire.Fixed64Type:
		return append(dst, conv(f.x)), nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return dst, d.errAt(f.at, "packed field %d: %d bytes is not a multiple of 8", f.num, len(f.b))
		}
		if dst == nil && len(f.b) > 0 {
			dst = take[T](&d.arena, len(f.b)/8)
		}
		for b := f.b; len(b) >= 8; b = b[8:] {
			dst = append(dst, conv(le64(b)))
		}
		return dst, nil
	}
	return dst, d.errAt(f.at, "field %d has wire type %d, expected fixed64", f.num, f.typ)
}

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

func u64id(v uint64) uint64      { return v }
func u32of(v uint64) uint32      { return uint32(v) }
func boolOf(v uint64) bool       { return v != 0 }
func sint32Of(v uint64) int32    { return int32(protowire.DecodeZigZag(v & math.MaxUint32)) }
func sint64Of(v uint64) int64    { return protowire.DecodeZigZag(v) }
func float32Of(v uint32) float32 { return math.Float32frombits(v) }
func float64Of(v uint64) float64 { return math.Float64frombits(v) }

// pbHeader decodes a FileHeader.
func pbHeader(b []byte) (*Header, error) {
	d := newPbDec(b)
	h := &Header{}
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 2:
			var m []byte
			if m, err = d.bytes(f); err == nil {
				err = d.versionInfo(m, h)
			}
		case 3:
			var m []byte
			if m, err = d.bytes(f); err == nil {
				err = d.contextualSchema(m, h)
			}
		case 4:
			h.ReplayUUID, err = d.str(f)
		case 5:
			h.ReplayName, err = d.str(f)
		case 6:
			var v uint64
			v, err = d.varint(f)
			h.RecordedUTC = int64(v)
		case 7:
			h.CustomJSONMetadata, err = d.str(f)
		}
		if err != nil {
			return nil, err
		}
	}
	return h, it.err
}

func (d *pbDec) versionInfo(b []byte, h *Header) error {
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var v uint64
		var err error
		switch f.num {
		case 1, 2, 3:
			v, err = d.varint(f)
		default:
			continue
		}
		if err != nil {
			return err
		}
		switch f.num {
		case 1:
			h.FormatMajor = uint32(v)
		case 2:
			h.FormatMinor = uint32(v)
		case 3:
			h.SchemaVersion = uint32(v)
		}
	}
	return it.err
}

func (d *pbDec) contextualSchema(b []byte, h *Header) error {
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1:
			h.DataIdentifier, err = d.str(f)
		case 2:
			var v uint64
			v, err = d.varint(f)
			h.DataVersion = int32(v)
		case 3:
			h.DataVersionString, err = d.str(f)
		case 4:
			h.Schema, err = d.str(f)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// pbFooter decodes a FileFooter.
func pbFooter(b []byte) (*Footer, error) {
	d := newPbDec(b)
	ft := &Footer{}
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		var m []byte
		switch f.num {
		case 1:
			var v uint64
			v, err = d.varint(f)
			ft.TotalFrames = int32(v)
		case 2:
			var v uint32
			v, err = d.fixed32(f)
			ft.DurationSeconds = math.Float32frombits(v)
		case 3:
			if m, err = d.bytes(f); err == nil {
				err = d.timeData(m, ft)
			}
		case 4:
			if m, err = d.bytes(f); err == nil {
				var e IndexEntry
				e, err = d.indexEntry(m)
				ft.Chunks = append(ft.Chunks, e)
			}
		case 5:
			if m, err = d.bytes(f); err == nil {
				var e TimelineEvent
				e, err = d.timelineEvent(m)
				ft.Events = append(ft.Events, e)
			}
		case 6:
			ft.PayloadChecksum, err = d.varint(f)
		}
		if err != nil {
			return nil, err
		}
	}
	return ft, it.err
}

func (d *pbDec) timeData(b []byte, ft *Footer) error {
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1:
			ft.GameTime, err = pbVarints(d, ft.GameTime, f, u64id)
		case 2:
			ft.CreatedUTC, err = pbVarints(d, ft.CreatedUTC, f, u64id)
		case 3:
			ft.Gaps, err = pbVarints(d, ft.Gaps, f, u32of)
		case 4:
			ft.Segments, err = pbVarints(d, ft.Segments, f, u32of)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

func (d *pbDec) indexEntry(b []byte) (IndexEntry, error) {
	var e IndexEntry
	it := d.iter(b)
	for it.next() {
		f := &it.f
		v, err := d.varint(f)
		if f.num < 1 || f.num > 6 {
			continue
		}
		if err != nil {
			return e, err
		}
		switch f.num {
		case 1:
			e.ChunkIndex = int32(v)
		case 2:
			e.StartFrame = int32(v)
		case 3:
			e.EndFrame = int32(v)
		case 4:
			e.FileOffset = v
		case 5:
			e.Size = uint32(v)
		case 6:
			e.Checksum = v
		}
	}
	return e, it.err
}

func (d *pbDec) timelineEvent(b []byte) (TimelineEvent, error) {
	var e TimelineEvent
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1:
			var v uint32
			v, err = d.fixed32(f)
			e.GameTime = math.Float32frombits(v)
		case 2:
			e.EventType, err = d.str(f)
		case 3:
			e.Label, err = d.str(f)
		case 4:
			var m []byte
			if m, err = d.bytes(f); err == nil {
				e.Location, err = d.vector(m)
			}
		case 5:
			e.EntityUniqueID, err = d.str(f)
		}
		if err != nil {
			return e, err
		}
	}
	return e, it.err
}

// pbChunk decodes a FrameChunk.
func pbChunk(b []byte) (*Chunk, error) {
	d := newPbDec(b)
	c := &Chunk{}
	if n, _ := d.count(b, 4, 0); n > 0 {
		c.Frames = make([]Frame, 0, n)
	}
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1:
			var v uint64
			v, err = d.varint(f)
			c.Index = int32(v)
		case 2:
			var v uint64
			v, err = d.varint(f)
			c.IsCompressed = v != 0
		case 3:
			var m []byte
			m, err = d.bytes(f)
			c.CompressedData = bytes.Clone(m)
		case 4:
			var m []byte
			if m, err = d.bytes(f); err == nil {
				c.Frames = append(c.Frames, Frame{})
				err = d.frame(m, &c.Frames[len(c.Frames)-1])
			}
		case 5:
			var m []byte
			if m, err = d.bytes(f); err == nil {
				c.CompressedFrames = append(c.CompressedFrames, bytes.Clone(m))
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return c, it.err
}

func (d *pbDec) frame(b []byte, fr *Frame) error {
	if n, _ := d.count(b, 1, 0); n > 0 {
		fr.Buckets = make([]Bucket, 0, n)
	}
	it := d.iter(b)
	for it.next() {
		f := &it.f
		if f.num != 1 {
			continue
		}
		m, err := d.bytes(f)
		if err != nil {
			return err
		}
		fr.Buckets = append(fr.Buckets, Bucket{})
		if err := d.bucket(m, &fr.Buckets[len(fr.Buckets)-1]); err != nil {
			return err
		}
	}
	return it.err
}

func (d *pbDec) bucket(b []byte, bk *Bucket) error {
	ni, ne := d.count(b, 1, 2)
	bk.UniqueIDs = take[string](&d.arena, ni)
	if ne > 0 {
		bk.Entities = make([]PropertyContainer, 0, ne)
	}
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		var m []byte
		switch f.num {
		case 1:
			var s string
			s, err = d.str(f)
			bk.UniqueIDs = append(bk.UniqueIDs, s)
		case 2:
			if m, err = d.bytes(f); err == nil {
				bk.Entities = append(bk.Entities, PropertyContainer{})
				err = d.container(m, &bk.Entities[len(bk.Entities)-1])
			}
		case 3:
			if m, err = d.bytes(f); err == nil {
				var r EntityRange
				r, err = d.entityRange(m)
				bk.TypeRanges = append(bk.TypeRanges, r)
			}
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

func (d *pbDec) entityRange(b []byte) (EntityRange, error) {
	var r EntityRange
	it := d.iter(b)
	for it.next() {
		f := &it.f
		if f.num != 1 && f.num != 2 {
			continue
		}
		v, err := d.varint(f)
		if err != nil {
			return r, err
		}
		if f.num == 1 {
			r.Start = int32(v)
		} else {
			r.Count = int32(v)
		}
	}
	return r, it.err
}

func (d *pbDec) vector(b []byte) (Vector, error) {
	var v Vector
	it := d.iter(b)
	for it.next() {
		f := &it.f
		if f.num < 1 || f.num > 3 {
			continue
		}
		x, err := d.fixed64(f)
		if err != nil {
			return v, err
		}
		switch f.num {
		case 1:
			v.X = math.Float64frombits(x)
		case 2:
			v.Y = math.Float64frombits(x)
		case 3:
			v.Z = math.Float64frombits(x)
		}
	}
	return v, it.err
}

// float32s decodes a message whose fields 1..len(dst) are fixed32 floats
// into dst, skipping other fields.
func (d *pbDec) float32s(b []byte, dst ...*float32) error {
	it := d.iter(b)
	for it.next() {
		f := &it.f
		if f.num < 1 || int(f.num) > len(dst) {
			continue
		}
		x, err := d.fixed32(f)
		if err != nil {
			return err
		}
		*dst[f.num-1] = math.Float32frombits(x)
	}
	return it.err
}

func (d *pbDec) quat(b []byte) (q Quat, err error) {
	err = d.float32s(b, &q.X, &q.Y, &q.Z, &q.W)
	return q, err
}

func (d *pbDec) floatRange(b []byte) (r FloatRange, err error) {
	err = d.float32s(b, &r.Min, &r.Max, &r.ValueNormalized)
	return r, err
}

func (d *pbDec) transform(b []byte) (Transform, error) {
	var t Transform
	it := d.iter(b)
	for it.next() {
		f := &it.f
		if f.num < 1 || f.num > 3 {
			continue
		}
		m, err := d.bytes(f)
		if err != nil {
			return t, err
		}
		switch f.num {
		case 1:
			t.Translation, err = d.vector(m)
		case 2:
			t.Rotation, err = d.quat(m)
		case 3:
			t.Scale, err = d.vector(m)
		}
		if err != nil {
			return t, err
		}
	}
	return t, it.err
}

// pbFlat decodes a Flat*Array message: data = 1 (through elem), offsets = 2.
func pbFlat[T any](d *pbDec, b []byte, pa **FlatArray[T], elem func(d *pbDec, dst []T, f *pbField) ([]T, error)) error {
	if *pa == nil {
		*pa = &FlatArray[T]{}
	}
	a := *pa
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1:
			a.Data, err = elem(d, a.Data, f)
		case 2:
			a.Offsets, err = pbVarints(d, a.Offsets, f, u32of)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// pbMsg appends one message element decoded by dec.
func pbMsg[T any](d *pbDec, dst []T, f *pbField, dec func(d *pbDec, b []byte) (T, error)) ([]T, error) {
	m, err := d.bytes(f)
	if err != nil {
		return dst, err
	}
	v, err := dec(d, m)
	return append(dst, v), err
}

func elemBool(d *pbDec, dst []bool, f *pbField) ([]bool, error) { return pbVarints(d, dst, f, boolOf) }
func elemBytes(d *pbDec, dst [][]byte, f *pbField) ([][]byte, error) {
	m, err := d.bytes(f)
	return append(dst, bytes.Clone(m)), err
}
func elemInt32(d *pbDec, dst []int32, f *pbField) ([]int32, error) {
	return pbVarints(d, dst, f, sint32Of)
}
func elemInt64(d *pbDec, dst []int64, f *pbField) ([]int64, error) {
	return pbVarints(d, dst, f, sint64Of)
}
func elemFloat(d *pbDec, dst []float32, f *pbField) ([]float32, error) {
	return pbFixed32s(d, dst, f, float32Of)
}
func elemDouble(d *pbDec, dst []float64, f *pbField) ([]float64, error) {
	return pbFixed64s(d, dst, f, float64Of)
}
func elemString(d *pbDec, dst []string, f *pbField) ([]string, error) {
	s, err := d.str(f)
	return append(dst, s), err
}

func elemVector(d *pbDec, dst []Vector, f *pbField) ([]Vector, error) {
	return pbMsg(d, dst, f, (*pbDec).vector)
}
func elemQuat(d *pbDec, dst []Quat, f *pbField) ([]Quat, error) {
	return pbMsg(d, dst, f, (*pbDec).quat)
}
func elemTransform(d *pbDec, dst []Transform, f *pbField) ([]Transform, error) {
	return pbMsg(d, dst, f, (*pbDec).transform)
}
func elemRange(d *pbDec, dst []FloatRange, f *pbField) ([]FloatRange, error) {
	return pbMsg(d, dst, f, (*pbDec).floatRange)
}

func elemContainer(d *pbDec, dst []PropertyContainer, f *pbField) ([]PropertyContainer, error) {
	m, err := d.bytes(f)
	if err != nil {
		return dst, err
	}
	dst = append(dst, PropertyContainer{})
	return dst, d.container(m, &dst[len(dst)-1])
}

func elemMap(d *pbDec, dst []MapContainer, f *pbField) ([]MapContainer, error) {
	m, err := d.bytes(f)
	if err != nil {
		return dst, err
	}
	dst = append(dst, MapContainer{})
	return dst, d.mapContainer(m, &dst[len(dst)-1])
}

func (d *pbDec) mapContainer(b []byte, mc *MapContainer) error {
	it := d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		switch f.num {
		case 1:
			mc.Keys, err = elemString(d, mc.Keys, f)
		case 2:
			mc.Values, err = elemContainer(d, mc.Values, f)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// container decodes a PropertyContainer.
func (d *pbDec) container(b []byte, p *PropertyContainer) error {
	if d.depth >= maxDepth {
		return d.errAt(b, "property containers nested deeper than %d", maxDepth)
	}
	d.depth++
	defer func() { d.depth-- }()
	var n [12]int // repeated message fields 7-11, counted to size them once
	it := d.iter(b)
	for it.next() {
		if k := it.f.num; k >= 7 && k <= 11 && it.f.typ == protowire.BytesType {
			n[k]++
		}
	}
	p.Strings = take[string](&d.arena, n[7])
	p.Transforms = take[Transform](&d.arena, n[8])
	p.Vectors = take[Vector](&d.arena, n[9])
	p.Quats = take[Quat](&d.arena, n[10])
	p.Ranges = take[FloatRange](&d.arena, n[11])
	it = d.iter(b)
	for it.next() {
		f := &it.f
		var err error
		var m []byte
		if f.num >= 12 && f.num <= 22 || f.num == 24 || f.num == 26 {
			if m, err = d.bytes(f); err != nil {
				return err
			}
		}
		switch f.num {
		case 1:
			var v uint64
			v, err = d.varint(f)
			p.TypeID = int32(v)
		case 2:
			p.Bools, err = elemBool(d, p.Bools, f)
		case 3:
			p.Int32s, err = elemInt32(d, p.Int32s, f)
		case 4:
			p.Int64s, err = elemInt64(d, p.Int64s, f)
		case 5:
			p.Floats, err = elemFloat(d, p.Floats, f)
		case 6:
			p.Doubles, err = elemDouble(d, p.Doubles, f)
		case 7:
			p.Strings, err = elemString(d, p.Strings, f)
		case 8:
			p.Transforms, err = elemTransform(d, p.Transforms, f)
		case 9:
			p.Vectors, err = elemVector(d, p.Vectors, f)
		case 10:
			p.Quats, err = elemQuat(d, p.Quats, f)
		case 11:
			p.Ranges, err = elemRange(d, p.Ranges, f)
		case 12:
			err = pbFlat(d, m, &p.ByteArrays, elemBytes)
		case 13:
			err = pbFlat(d, m, &p.Int32Arrays, elemInt32)
		case 14:
			err = pbFlat(d, m, &p.Int64Arrays, elemInt64)
		case 15:
			err = pbFlat(d, m, &p.FloatArrays, elemFloat)
		case 16:
			err = pbFlat(d, m, &p.DoubleArrays, elemDouble)
		case 17:
			err = pbFlat(d, m, &p.VectorArrays, elemVector)
		case 18:
			err = pbFlat(d, m, &p.QuatArrays, elemQuat)
		case 19:
			err = pbFlat(d, m, &p.TransformArrays, elemTransform)
		case 20:
			err = pbFlat(d, m, &p.RangeArrays, elemRange)
		case 21:
			err = pbFlat(d, m, &p.BoolArrays, elemBool)
		case 22:
			err = pbFlat(d, m, &p.StringArrays, elemString)
		case 23:
			p.Structs, err = elemContainer(d, p.Structs, f)
		case 24:
			err = pbFlat(d, m, &p.StructArrays, elemContainer)
		case 25:
			p.Maps, err = elemMap(d, p.Maps, f)
		case 26:
			err = pbFlat(d, m, &p.MapArrays, elemMap)
		case 27:
			p.ContentHash, err = d.varint(f)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}
