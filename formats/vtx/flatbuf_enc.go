// This file encodes the FlatBuffers backend (VTXF) with the flatbuffers
// Builder, table by table in the slot order of the SDK's vtx_schema.fbs.
// Empty vectors and zero scalars are left out, as flatc's generated code
// does by default.

package vtx

import (
	flatbuffers "github.com/google/flatbuffers/go"
)

type fbEnc struct {
	b *flatbuffers.Builder
}

func newFbEnc() *fbEnc { return &fbEnc{b: flatbuffers.NewBuilder(1 << 16)} }

// finish returns the finished buffer with root; it stays valid until the
// next reset.
func (e *fbEnc) finish(root flatbuffers.UOffsetT) []byte {
	e.b.Finish(root)
	return e.b.FinishedBytes()
}

func (e *fbEnc) str(s string) flatbuffers.UOffsetT {
	if s == "" {
		return 0
	}
	return e.b.CreateString(s)
}

// scalars writes a vector of n elements of size bytes, put prepending
// element i.
func (e *fbEnc) vec(n, size, align int, put func(i int)) flatbuffers.UOffsetT {
	if n == 0 {
		return 0
	}
	e.b.StartVector(size, n, align)
	for i := n - 1; i >= 0; i-- {
		put(i)
	}
	return e.b.EndVector(n)
}

func (e *fbEnc) offsets(offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	return e.vec(len(offs), 4, 4, func(i int) { e.b.PrependUOffsetT(offs[i]) })
}

func (e *fbEnc) strings(ss []string) flatbuffers.UOffsetT {
	if len(ss) == 0 {
		return 0
	}
	offs := make([]flatbuffers.UOffsetT, len(ss))
	for i, s := range ss {
		offs[i] = e.b.CreateString(s)
	}
	return e.offsets(offs)
}

func (e *fbEnc) bools(v []bool) flatbuffers.UOffsetT {
	return e.vec(len(v), 1, 1, func(i int) { e.b.PrependBool(v[i]) })
}
func (e *fbEnc) bytes(v []byte) flatbuffers.UOffsetT {
	if len(v) == 0 {
		return 0
	}
	return e.b.CreateByteVector(v)
}
func (e *fbEnc) int32s(v []int32) flatbuffers.UOffsetT {
	return e.vec(len(v), 4, 4, func(i int) { e.b.PrependInt32(v[i]) })
}
func (e *fbEnc) uint32s(v []uint32) flatbuffers.UOffsetT {
	return e.vec(len(v), 4, 4, func(i int) { e.b.PrependUint32(v[i]) })
}
func (e *fbEnc) int64s(v []int64) flatbuffers.UOffsetT {
	return e.vec(len(v), 8, 8, func(i int) { e.b.PrependInt64(v[i]) })
}
func (e *fbEnc) uint64s(v []uint64) flatbuffers.UOffsetT {
	return e.vec(len(v), 8, 8, func(i int) { e.b.PrependUint64(v[i]) })
}
func (e *fbEnc) float32s(v []float32) flatbuffers.UOffsetT {
	return e.vec(len(v), 4, 4, func(i int) { e.b.PrependFloat32(v[i]) })
}
func (e *fbEnc) float64s(v []float64) flatbuffers.UOffsetT {
	return e.vec(len(v), 8, 8, func(i int) { e.b.PrependFloat64(v[i]) })
}

func (e *fbEnc) vector(v Vector) flatbuffers.UOffsetT {
	e.b.Prep(8, sizeVector)
	e.b.PrependFloat64(v.Z)
	e.b.PrependFloat64(v.Y)
	e.b.PrependFloat64(v.X)
	return e.b.Offset()
}

func (e *fbEnc) quat(q Quat) flatbuffers.UOffsetT {
	e.b.Prep(4, sizeQuat)
	e.b.PrependFloat32(q.W)
	e.b.PrependFloat32(q.Z)
	e.b.PrependFloat32(q.Y)
	e.b.PrependFloat32(q.X)
	return e.b.Offset()
}

func (e *fbEnc) transform(t Transform) flatbuffers.UOffsetT {
	e.b.Prep(8, sizeTransform)
	e.vector(t.Scale)
	e.quat(t.Rotation)
	e.vector(t.Translation)
	return e.b.Offset()
}

func (e *fbEnc) floatRange(r FloatRange) flatbuffers.UOffsetT {
	e.b.Prep(4, sizeRange)
	e.b.PrependFloat32(r.ValueNormalized)
	e.b.PrependFloat32(r.Max)
	e.b.PrependFloat32(r.Min)
	return e.b.Offset()
}

func (e *fbEnc) vectors(v []Vector) flatbuffers.UOffsetT {
	return e.vec(len(v), sizeVector, 8, func(i int) { e.vector(v[i]) })
}
func (e *fbEnc) quats(v []Quat) flatbuffers.UOffsetT {
	return e.vec(len(v), sizeQuat, 4, func(i int) { e.quat(v[i]) })
}
func (e *fbEnc) transforms(v []Transform) flatbuffers.UOffsetT {
	return e.vec(len(v), sizeTransform, 8, func(i int) { e.transform(v[i]) })
}
func (e *fbEnc) ranges(v []FloatRange) flatbuffers.UOffsetT {
	return e.vec(len(v), sizeRange, 4, func(i int) { e.floatRange(v[i]) })
}

// flat writes a Flat*Array table whose data vector data builds.
func fbFlatEnc[T any](e *fbEnc, a *FlatArray[T], data func([]T) flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	if a.empty() {
		return 0
	}
	d := data(a.Data)
	o := e.uint32s(a.Offsets)
	e.b.StartObject(2)
	e.slot(0, d)
	e.slot(1, o)
	return e.b.EndObject()
}

func (e *fbEnc) slot(i int, off flatbuffers.UOffsetT) {
	if off != 0 {
		e.b.PrependUOffsetTSlot(i, off, 0)
	}
}

func (e *fbEnc) containers(v []PropertyContainer) flatbuffers.UOffsetT {
	if len(v) == 0 {
		return 0
	}
	offs := make([]flatbuffers.UOffsetT, len(v))
	for i := range v {
		offs[i] = e.container(&v[i])
	}
	return e.offsets(offs)
}

func (e *fbEnc) maps(v []MapContainer) flatbuffers.UOffsetT {
	if len(v) == 0 {
		return 0
	}
	offs := make([]flatbuffers.UOffsetT, len(v))
	for i := range v {
		k := e.strings(v[i].Keys)
		vals := e.containers(v[i].Values)
		e.b.StartObject(2)
		e.slot(0, k)
		e.slot(1, vals)
		offs[i] = e.b.EndObject()
	}
	return e.offsets(offs)
}

func (e *fbEnc) byteArrays(v [][]byte) flatbuffers.UOffsetT {
	n := 0
	for _, b := range v {
		n += len(b)
	}
	flat := make([]byte, 0, n)
	for _, b := range v {
		flat = append(flat, b...)
	}
	return e.bytes(flat)
}

// container writes a PropertyContainer table.
func (e *fbEnc) container(p *PropertyContainer) flatbuffers.UOffsetT {
	var o [27]flatbuffers.UOffsetT
	o[1] = e.bools(p.Bools)
	o[2] = e.int32s(p.Int32s)
	o[3] = e.int64s(p.Int64s)
	o[4] = e.float32s(p.Floats)
	o[5] = e.float64s(p.Doubles)
	o[6] = e.strings(p.Strings)
	o[7] = e.transforms(p.Transforms)
	o[8] = e.vectors(p.Vectors)
	o[9] = e.quats(p.Quats)
	o[10] = e.ranges(p.Ranges)
	o[11] = fbFlatEnc(e, p.ByteArrays, e.byteArrays)
	o[12] = fbFlatEnc(e, p.Int32Arrays, e.int32s)
	o[13] = fbFlatEnc(e, p.Int64Arrays, e.int64s)
	o[14] = fbFlatEnc(e, p.FloatArrays, e.float32s)
	o[15] = fbFlatEnc(e, p.DoubleArrays, e.float64s)
	o[16] = fbFlatEnc(e, p.VectorArrays, e.vectors)
	o[17] = fbFlatEnc(e, p.QuatArrays, e.quats)
	o[18] = fbFlatEnc(e, p.TransformArrays, e.transforms)
	o[19] = fbFlatEnc(e, p.RangeArrays, e.ranges)
	o[20] = fbFlatEnc(e, p.BoolArrays, e.bools)
	o[21] = fbFlatEnc(e, p.StringArrays, e.strings)
	o[22] = e.containers(p.Structs)
	o[23] = fbFlatEnc(e, p.StructArrays, e.containers)
	o[24] = e.maps(p.Maps)
	o[25] = fbFlatEnc(e, p.MapArrays, e.maps)
	e.b.StartObject(27)
	e.b.PrependUint64Slot(26, p.ContentHash, 0)
	for i := 25; i >= 1; i-- {
		e.slot(i, o[i])
	}
	e.b.PrependInt32Slot(0, p.TypeID, 0)
	return e.b.EndObject()
}

func (e *fbEnc) frame(f *Frame) flatbuffers.UOffsetT {
	var data flatbuffers.UOffsetT
	if len(f.Buckets) > 0 {
		offs := make([]flatbuffers.UOffsetT, len(f.Buckets))
		for i := range f.Buckets {
			bk := &f.Buckets[i]
			ids := e.strings(bk.UniqueIDs)
			ents := e.containers(bk.Entities)
			tr := e.vec(len(bk.TypeRanges), sizeEntityRange, 4, func(i int) {
				e.b.Prep(4, sizeEntityRange)
				e.b.PrependInt32(bk.TypeRanges[i].Count)
				e.b.PrependInt32(bk.TypeRanges[i].Start)
			})
			e.b.StartObject(3)
			e.slot(0, ids)
			e.slot(1, ents)
			e.slot(2, tr)
			offs[i] = e.b.EndObject()
		}
		data = e.offsets(offs)
	}
	e.b.StartObject(1)
	e.slot(0, data)
	return e.b.EndObject()
}

// header returns a finished FileHeader buffer.
func (e *fbEnc) header(h *Header) []byte {
	e.b.Reset()
	e.b.StartObject(3)
	e.b.PrependUint32Slot(0, h.FormatMajor, 0)
	e.b.PrependUint32Slot(1, h.FormatMinor, 0)
	e.b.PrependUint32Slot(2, h.SchemaVersion, 0)
	ver := e.b.EndObject()
	id, dvs, schema := e.str(h.DataIdentifier), e.str(h.DataVersionString), e.str(h.Schema)
	e.b.StartObject(4)
	e.slot(0, id)
	e.b.PrependInt32Slot(1, h.DataVersion, 0)
	e.slot(2, dvs)
	e.slot(3, schema)
	cs := e.b.EndObject()
	uuid, name, custom := e.str(h.ReplayUUID), e.str(h.ReplayName), e.str(h.CustomJSONMetadata)
	e.b.StartObject(6)
	e.b.PrependInt64Slot(4, h.RecordedUTC, 0)
	e.slot(0, ver)
	e.slot(1, cs)
	e.slot(2, uuid)
	e.slot(3, name)
	e.slot(5, custom)
	return e.finish(e.b.EndObject())
}

// footer returns a finished FileFooter buffer.
func (e *fbEnc) footer(f *Footer) []byte {
	e.b.Reset()
	gt, cu := e.uint64s(f.GameTime), e.uint64s(f.CreatedUTC)
	gaps, segs := e.uint32s(f.Gaps), e.uint32s(f.Segments)
	e.b.StartObject(4)
	e.slot(0, gt)
	e.slot(1, cu)
	e.slot(2, gaps)
	e.slot(3, segs)
	times := e.b.EndObject()
	idx := make([]flatbuffers.UOffsetT, len(f.Chunks))
	for i, c := range f.Chunks {
		e.b.StartObject(6)
		e.b.PrependUint64Slot(3, c.FileOffset, 0)
		e.b.PrependUint64Slot(5, c.Checksum, 0)
		e.b.PrependInt32Slot(0, c.ChunkIndex, 0)
		e.b.PrependInt32Slot(1, c.StartFrame, 0)
		e.b.PrependInt32Slot(2, c.EndFrame, 0)
		e.b.PrependUint32Slot(4, c.Size, 0)
		idx[i] = e.b.EndObject()
	}
	chunks := e.offsets(idx)
	evs := make([]flatbuffers.UOffsetT, len(f.Events))
	for i, ev := range f.Events {
		et, lb, uid := e.str(ev.EventType), e.str(ev.Label), e.str(ev.EntityUniqueID)
		e.b.StartObject(5)
		e.b.PrependStructSlot(3, e.vector(ev.Location), 0)
		e.b.PrependFloat32Slot(0, ev.GameTime, 0)
		e.slot(1, et)
		e.slot(2, lb)
		e.slot(4, uid)
		evs[i] = e.b.EndObject()
	}
	events := e.offsets(evs)
	e.b.StartObject(6)
	e.b.PrependUint64Slot(5, f.PayloadChecksum, 0)
	e.b.PrependInt32Slot(0, f.TotalFrames, 0)
	e.b.PrependFloat32Slot(1, f.DurationSeconds, 0)
	e.slot(2, times)
	e.slot(3, chunks)
	e.slot(4, events)
	return e.finish(e.b.EndObject())
}
