// This file decodes the FlatBuffers backend (VTXF) with hand-written,
// bounds-checked table accessors following the SDK's vtx_schema.fbs
// (namespace fbsvtx). Every offset is checked against the buffer before it
// is followed, nesting is bounded by maxDepth, and a byte budget the size of
// the buffer stops shared or cyclic offsets from multiplying the work.

package vtx

import (
	"fmt"
	"math"
)

// Sizes of the fbsvtx structs.
const (
	sizeVector      = 24
	sizeQuat        = 16
	sizeTransform   = 64
	sizeRange       = 12
	sizeEntityRange = 8
)

type fbDec struct {
	b      []byte
	depth  int
	budget int
	arena
}

func newFbDec(b []byte) *fbDec {
	d := &fbDec{b: b, budget: len(b)}
	d.raw = b
	return d
}

// fbTable is one table: its position and its vtable's.
type fbTable struct {
	pos, vt, vtLen int
}

func (d *fbDec) errAt(pos int, format string, args ...any) error {
	return &msgError{pos: pos, what: fmt.Sprintf(format, args...)}
}

func (d *fbDec) need(pos, n int) error {
	if pos < 0 || n < 0 || pos > len(d.b) || n > len(d.b)-pos {
		return d.errAt(pos, "%d bytes at %d run past the end of the %d-byte buffer", n, pos, len(d.b))
	}
	return nil
}

func (d *fbDec) charge(pos, n int) error {
	d.budget -= n
	if d.budget < 0 {
		return d.errAt(pos, "offsets reference more data than the buffer holds (shared or cyclic tables)")
	}
	return nil
}

func (d *fbDec) u16(pos int) int    { return int(d.b[pos]) | int(d.b[pos+1])<<8 }
func (d *fbDec) u32(pos int) uint32 { return le32(d.b[pos:]) }
func (d *fbDec) u64(pos int) uint64 { return le64(d.b[pos:]) }

// table reads the table at pos.
func (d *fbDec) table(pos int) (fbTable, error) {
	if err := d.need(pos, 4); err != nil {
		return fbTable{}, err
	}
	vt := pos - int(int32(d.u32(pos)))
	if err := d.need(vt, 4); err != nil {
		return fbTable{}, d.errAt(pos, "table's vtable offset points outside the buffer")
	}
	vtLen, tLen := d.u16(vt), d.u16(vt+2)
	if vtLen < 4 || vtLen%2 != 0 {
		return fbTable{}, d.errAt(vt, "vtable size %d is invalid", vtLen)
	}
	if err := d.need(vt, vtLen); err != nil {
		return fbTable{}, err
	}
	if err := d.need(pos, tLen); err != nil {
		return fbTable{}, err
	}
	if err := d.charge(pos, max(tLen, 4)); err != nil {
		return fbTable{}, err
	}
	return fbTable{pos: pos, vt: vt, vtLen: vtLen}, nil
}

// root reads the root table.
func (d *fbDec) root() (fbTable, error) {
	if err := d.need(0, 4); err != nil {
		return fbTable{}, err
	}
	return d.table(int(d.u32(0)))
}

// field returns the position of slot's value (size bytes), or 0 when the
// field is absent.
func (d *fbDec) field(t fbTable, slot, size int) (int, error) {
	vo := 4 + 2*slot
	if vo+2 > t.vtLen {
		return 0, nil
	}
	off := d.u16(t.vt + vo)
	if off == 0 {
		return 0, nil
	}
	p := t.pos + off
	if err := d.need(p, size); err != nil {
		return 0, err
	}
	return p, nil
}

func (d *fbDec) i32(t fbTable, slot int) (int32, error) {
	p, err := d.field(t, slot, 4)
	if p == 0 || err != nil {
		return 0, err
	}
	return int32(d.u32(p)), nil
}

func (d *fbDec) f32(t fbTable, slot int) (float32, error) {
	v, err := d.i32(t, slot)
	return math.Float32frombits(uint32(v)), err
}

func (d *fbDec) i64(t fbTable, slot int) (uint64, error) {
	p, err := d.field(t, slot, 8)
	if p == 0 || err != nil {
		return 0, err
	}
	return d.u64(p), nil
}

func (d *fbDec) boolean(t fbTable, slot int) (bool, error) {
	p, err := d.field(t, slot, 1)
	if p == 0 || err != nil {
		return false, err
	}
	return d.b[p] != 0, nil
}

// indirect follows the uoffset in slot; 0 when absent.
func (d *fbDec) indirect(t fbTable, slot int) (int, error) {
	p, err := d.field(t, slot, 4)
	if p == 0 || err != nil {
		return 0, err
	}
	q := p + int(d.u32(p))
	if err := d.need(q, 4); err != nil {
		return 0, d.errAt(p, "offset %d points outside the buffer", d.u32(p))
	}
	return q, nil
}

func (d *fbDec) subTable(t fbTable, slot int) (fbTable, bool, error) {
	p, err := d.indirect(t, slot)
	if p == 0 || err != nil {
		return fbTable{}, false, err
	}
	st, err := d.table(p)
	return st, err == nil, err
}

// vector returns the position of the first element and the element count
// of the vector in slot.
func (d *fbDec) vector(t fbTable, slot, elemSize int) (int, int, error) {
	p, err := d.indirect(t, slot)
	if p == 0 || err != nil {
		return 0, 0, err
	}
	n := int(d.u32(p))
	start := p + 4
	if n > (len(d.b)-start)/elemSize {
		return 0, 0, d.errAt(p, "vector of %d %d-byte elements runs past the end of the buffer", n, elemSize)
	}
	if err := d.charge(p, n*elemSize); err != nil {
		return 0, 0, err
	}
	return start, n, nil
}

func (d *fbDec) stringAt(p int) (string, error) {
	if err := d.need(p, 4); err != nil {
		return "", err
	}
	n := int(d.u32(p))
	if n > len(d.b)-p-4 {
		return "", d.errAt(p, "string of %d bytes runs past the end of the buffer", n)
	}
	if err := d.charge(p, n); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	return d.substr(p+4, n), nil
}

func (d *fbDec) str(t fbTable, slot int) (string, error) {
	p, err := d.indirect(t, slot)
	if p == 0 || err != nil {
		return "", err
	}
	return d.stringAt(p)
}

// fbScalars reads a vector of fixed-size scalars or structs through get.
func fbScalars[T any](d *fbDec, t fbTable, slot, size int, get func(d *fbDec, p int) T) ([]T, error) {
	start, n, err := d.vector(t, slot, size)
	if n == 0 || err != nil {
		return nil, err
	}
	out := take[T](&d.arena, n)[:n]
	for i := range out {
		out[i] = get(d, start+i*size)
	}
	return out, nil
}

// fbOffsets reads a vector of offsets (tables or strings) through get.
func fbOffsets[T any](d *fbDec, t fbTable, slot int, get func(d *fbDec, p int) (T, error)) ([]T, error) {
	start, n, err := d.vector(t, slot, 4)
	if n == 0 || err != nil {
		return nil, err
	}
	out := take[T](&d.arena, n)[:n]
	for i := range out {
		e := start + 4*i
		q := e + int(d.u32(e))
		if err := d.need(q, 4); err != nil {
			return nil, d.errAt(e, "element %d's offset points outside the buffer", i)
		}
		if out[i], err = get(d, q); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func getBool(d *fbDec, p int) bool              { return d.b[p] != 0 }
func getByte(d *fbDec, p int) byte              { return d.b[p] }
func getI32(d *fbDec, p int) int32              { return int32(d.u32(p)) }
func getU32(d *fbDec, p int) uint32             { return d.u32(p) }
func getI64(d *fbDec, p int) int64              { return int64(d.u64(p)) }
func getU64(d *fbDec, p int) uint64             { return d.u64(p) }
func getF32(d *fbDec, p int) float32            { return math.Float32frombits(d.u32(p)) }
func getF64(d *fbDec, p int) float64            { return math.Float64frombits(d.u64(p)) }
func getString(d *fbDec, p int) (string, error) { return d.stringAt(p) }

func getVector(d *fbDec, p int) Vector {
	return Vector{getF64(d, p), getF64(d, p+8), getF64(d, p+16)}
}

func getQuat(d *fbDec, p int) Quat {
	return Quat{getF32(d, p), getF32(d, p+4), getF32(d, p+8), getF32(d, p+12)}
}

func getTransform(d *fbDec, p int) Transform {
	return Transform{getVector(d, p), getQuat(d, p+24), getVector(d, p+40)}
}

func getRange(d *fbDec, p int) FloatRange {
	return FloatRange{getF32(d, p), getF32(d, p+4), getF32(d, p+8)}
}

func getEntityRange(d *fbDec, p int) EntityRange {
	return EntityRange{int32(d.u32(p)), int32(d.u32(p + 4))}
}

// fbHeader decodes a FileHeader root.
func fbHeader(b []byte) (*Header, error) {
	d := newFbDec(b)
	t, err := d.root()
	if err != nil {
		return nil, err
	}
	h := &Header{}
	if v, ok, err := d.subTable(t, 0); err != nil {
		return nil, err
	} else if ok {
		var x [3]int32
		for i := range x {
			if x[i], err = d.i32(v, i); err != nil {
				return nil, err
			}
		}
		h.FormatMajor, h.FormatMinor, h.SchemaVersion = uint32(x[0]), uint32(x[1]), uint32(x[2])
	}
	if cs, ok, err := d.subTable(t, 1); err != nil {
		return nil, err
	} else if ok {
		if h.DataIdentifier, err = d.str(cs, 0); err != nil {
			return nil, err
		}
		if h.DataVersion, err = d.i32(cs, 1); err != nil {
			return nil, err
		}
		if h.DataVersionString, err = d.str(cs, 2); err != nil {
			return nil, err
		}
		if h.Schema, err = d.str(cs, 3); err != nil {
			return nil, err
		}
	}
	if h.ReplayUUID, err = d.str(t, 2); err != nil {
		return nil, err
	}
	if h.ReplayName, err = d.str(t, 3); err != nil {
		return nil, err
	}
	ts, err := d.i64(t, 4)
	if err != nil {
		return nil, err
	}
	h.RecordedUTC = int64(ts)
	if h.CustomJSONMetadata, err = d.str(t, 5); err != nil {
		return nil, err
	}
	return h, nil
}

// fbFooter decodes a FileFooter root.
func fbFooter(b []byte) (*Footer, error) {
	d := newFbDec(b)
	t, err := d.root()
	if err != nil {
		return nil, err
	}
	f := &Footer{}
	if f.TotalFrames, err = d.i32(t, 0); err != nil {
		return nil, err
	}
	if f.DurationSeconds, err = d.f32(t, 1); err != nil {
		return nil, err
	}
	if tt, ok, err := d.subTable(t, 2); err != nil {
		return nil, err
	} else if ok {
		if f.GameTime, err = fbScalars(d, tt, 0, 8, getU64); err != nil {
			return nil, err
		}
		if f.CreatedUTC, err = fbScalars(d, tt, 1, 8, getU64); err != nil {
			return nil, err
		}
		if f.Gaps, err = fbScalars(d, tt, 2, 4, getU32); err != nil {
			return nil, err
		}
		if f.Segments, err = fbScalars(d, tt, 3, 4, getU32); err != nil {
			return nil, err
		}
	}
	if f.Chunks, err = fbOffsets(d, t, 3, (*fbDec).indexEntry); err != nil {
		return nil, err
	}
	if f.Events, err = fbOffsets(d, t, 4, (*fbDec).timelineEvent); err != nil {
		return nil, err
	}
	if f.PayloadChecksum, err = d.i64(t, 5); err != nil {
		return nil, err
	}
	return f, nil
}

func (d *fbDec) indexEntry(p int) (IndexEntry, error) {
	var e IndexEntry
	t, err := d.table(p)
	if err != nil {
		return e, err
	}
	var x [3]int32
	for i := range x {
		if x[i], err = d.i32(t, i); err != nil {
			return e, err
		}
	}
	e.ChunkIndex, e.StartFrame, e.EndFrame = x[0], x[1], x[2]
	if e.FileOffset, err = d.i64(t, 3); err != nil {
		return e, err
	}
	size, err := d.i32(t, 4)
	if err != nil {
		return e, err
	}
	e.Size = uint32(size)
	e.Checksum, err = d.i64(t, 5)
	return e, err
}

func (d *fbDec) timelineEvent(p int) (TimelineEvent, error) {
	var e TimelineEvent
	t, err := d.table(p)
	if err != nil {
		return e, err
	}
	if e.GameTime, err = d.f32(t, 0); err != nil {
		return e, err
	}
	if e.EventType, err = d.str(t, 1); err != nil {
		return e, err
	}
	if e.Label, err = d.str(t, 2); err != nil {
		return e, err
	}
	if q, err := d.field(t, 3, sizeVector); err != nil {
		return e, err
	} else if q != 0 {
		e.Location = getVector(d, q)
	}
	e.EntityUniqueID, err = d.str(t, 4)
	return e, err
}

// fbChunk decodes a Chunk root.
func fbChunk(b []byte) (*Chunk, error) {
	d := newFbDec(b)
	t, err := d.root()
	if err != nil {
		return nil, err
	}
	c := &Chunk{}
	if c.Index, err = d.i32(t, 0); err != nil {
		return nil, err
	}
	if c.IsCompressed, err = d.boolean(t, 1); err != nil {
		return nil, err
	}
	if c.CompressedData, err = fbScalars(d, t, 2, 1, getByte); err != nil {
		return nil, err
	}
	if c.Frames, err = fbOffsets(d, t, 3, (*fbDec).frame); err != nil {
		return nil, err
	}
	cf, err := fbScalars(d, t, 4, 1, getByte)
	if err != nil {
		return nil, err
	}
	if cf != nil {
		c.CompressedFrames = [][]byte{cf}
	}
	return c, nil
}

func (d *fbDec) frame(p int) (Frame, error) {
	var f Frame
	t, err := d.table(p)
	if err != nil {
		return f, err
	}
	f.Buckets, err = fbOffsets(d, t, 0, (*fbDec).bucket)
	return f, err
}

func (d *fbDec) bucket(p int) (Bucket, error) {
	var bk Bucket
	t, err := d.table(p)
	if err != nil {
		return bk, err
	}
	if bk.UniqueIDs, err = fbOffsets(d, t, 0, getString); err != nil {
		return bk, err
	}
	if bk.Entities, err = fbOffsets(d, t, 1, (*fbDec).container); err != nil {
		return bk, err
	}
	bk.TypeRanges, err = fbScalars(d, t, 2, sizeEntityRange, getEntityRange)
	return bk, err
}

// fbFlat decodes a Flat*Array table in slot: data (slot 0) through data,
// offsets (slot 1).
func fbFlat[T any](d *fbDec, t fbTable, slot int, pa **FlatArray[T], data func(d *fbDec, t fbTable) ([]T, error)) error {
	ft, ok, err := d.subTable(t, slot)
	if !ok || err != nil {
		return err
	}
	a := &FlatArray[T]{}
	*pa = a
	if a.Data, err = data(d, ft); err != nil {
		return err
	}
	a.Offsets, err = fbScalars(d, ft, 1, 4, getU32)
	return err
}

func scalarData[T any](size int, get func(d *fbDec, p int) T) func(d *fbDec, t fbTable) ([]T, error) {
	return func(d *fbDec, t fbTable) ([]T, error) { return fbScalars(d, t, 0, size, get) }
}

func offsetData[T any](get func(d *fbDec, p int) (T, error)) func(d *fbDec, t fbTable) ([]T, error) {
	return func(d *fbDec, t fbTable) ([]T, error) { return fbOffsets(d, t, 0, get) }
}

func bytesData(d *fbDec, t fbTable) ([][]byte, error) {
	b, err := fbScalars(d, t, 0, 1, getByte)
	if b == nil || err != nil {
		return nil, err
	}
	return [][]byte{b}, nil
}

func (d *fbDec) mapContainer(p int) (MapContainer, error) {
	var m MapContainer
	t, err := d.table(p)
	if err != nil {
		return m, err
	}
	if m.Keys, err = fbOffsets(d, t, 0, getString); err != nil {
		return m, err
	}
	m.Values, err = fbOffsets(d, t, 1, (*fbDec).container)
	return m, err
}

// container decodes a PropertyContainer table.
func (d *fbDec) container(pos int) (PropertyContainer, error) {
	var p PropertyContainer
	if d.depth >= maxDepth {
		return p, d.errAt(pos, "property containers nested deeper than %d", maxDepth)
	}
	d.depth++
	defer func() { d.depth-- }()
	t, err := d.table(pos)
	if err != nil {
		return p, err
	}
	if p.TypeID, err = d.i32(t, 0); err != nil {
		return p, err
	}
	if p.Bools, err = fbScalars(d, t, 1, 1, getBool); err != nil {
		return p, err
	}
	if p.Int32s, err = fbScalars(d, t, 2, 4, getI32); err != nil {
		return p, err
	}
	if p.Int64s, err = fbScalars(d, t, 3, 8, getI64); err != nil {
		return p, err
	}
	if p.Floats, err = fbScalars(d, t, 4, 4, getF32); err != nil {
		return p, err
	}
	if p.Doubles, err = fbScalars(d, t, 5, 8, getF64); err != nil {
		return p, err
	}
	if p.Strings, err = fbOffsets(d, t, 6, getString); err != nil {
		return p, err
	}
	if p.Transforms, err = fbScalars(d, t, 7, sizeTransform, getTransform); err != nil {
		return p, err
	}
	if p.Vectors, err = fbScalars(d, t, 8, sizeVector, getVector); err != nil {
		return p, err
	}
	if p.Quats, err = fbScalars(d, t, 9, sizeQuat, getQuat); err != nil {
		return p, err
	}
	if p.Ranges, err = fbScalars(d, t, 10, sizeRange, getRange); err != nil {
		return p, err
	}
	if p.Structs, err = fbOffsets(d, t, 22, (*fbDec).container); err != nil {
		return p, err
	}
	if p.Maps, err = fbOffsets(d, t, 24, (*fbDec).mapContainer); err != nil {
		return p, err
	}
	if p.ContentHash, err = d.i64(t, 26); err != nil {
		return p, err
	}
	if t.vtLen <= 4+2*11 {
		return p, nil // no array slots in this vtable
	}
	return p, d.arrays(t, &p)
}

// arrays decodes the Flat*Array slots (11-21, 23, 25) of a container.
func (d *fbDec) arrays(t fbTable, p *PropertyContainer) error {
	errs := [...]error{
		fbFlat(d, t, 11, &p.ByteArrays, bytesData),
		fbFlat(d, t, 12, &p.Int32Arrays, scalarData(4, getI32)),
		fbFlat(d, t, 13, &p.Int64Arrays, scalarData(8, getI64)),
		fbFlat(d, t, 14, &p.FloatArrays, scalarData(4, getF32)),
		fbFlat(d, t, 15, &p.DoubleArrays, scalarData(8, getF64)),
		fbFlat(d, t, 16, &p.VectorArrays, scalarData(sizeVector, getVector)),
		fbFlat(d, t, 17, &p.QuatArrays, scalarData(sizeQuat, getQuat)),
		fbFlat(d, t, 18, &p.TransformArrays, scalarData(sizeTransform, getTransform)),
		fbFlat(d, t, 19, &p.RangeArrays, scalarData(sizeRange, getRange)),
		fbFlat(d, t, 20, &p.BoolArrays, scalarData(1, getBool)),
		fbFlat(d, t, 21, &p.StringArrays, offsetData(getString)),
		fbFlat(d, t, 23, &p.StructArrays, offsetData((*fbDec).container)),
		fbFlat(d, t, 25, &p.MapArrays, offsetData((*fbDec).mapContainer)),
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
