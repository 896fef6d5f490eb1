// This file encodes the protobuf backend (VTXP) with protowire, following
// proto3 rules: zero scalars and empty repeated fields are left out,
// repeated scalars are packed.

package vtx

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// pbAppendMsg appends field num as a length-delimited message written by f.
func pbAppendMsg(b []byte, num protowire.Number, f func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	start := len(b)
	b = f(b)
	n := len(b) - start
	sz := protowire.SizeVarint(uint64(n))
	var pad [binaryMaxVarint]byte
	b = append(b, pad[:sz]...)
	copy(b[start+sz:], b[start:start+n])
	protowire.AppendVarint(b[:start], uint64(n))
	return b
}

const binaryMaxVarint = 10

func pbVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func pbString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func pbFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

func pbFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

// pbPacked appends a packed repeated field whose elements put writes.
func pbPacked[T any](b []byte, num protowire.Number, vs []T, put func([]byte, T) []byte) []byte {
	if len(vs) == 0 {
		return b
	}
	return pbAppendMsg(b, num, func(b []byte) []byte {
		for _, v := range vs {
			b = put(b, v)
		}
		return b
	})
}

func putBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}
func putSint32(b []byte, v int32) []byte {
	return protowire.AppendVarint(b, protowire.EncodeZigZag(int64(v)))
}
func putSint64(b []byte, v int64) []byte  { return protowire.AppendVarint(b, protowire.EncodeZigZag(v)) }
func putFloat(b []byte, v float32) []byte { return protowire.AppendFixed32(b, math.Float32bits(v)) }
func putDouble(b []byte, v float64) []byte {
	return protowire.AppendFixed64(b, math.Float64bits(v))
}
func putU32(b []byte, v uint32) []byte { return protowire.AppendVarint(b, uint64(v)) }
func putU64(b []byte, v uint64) []byte { return protowire.AppendVarint(b, v) }

// pbRepeated appends one length-delimited field per element.
func pbRepeated[T any](b []byte, num protowire.Number, vs []T, put func([]byte, T) []byte) []byte {
	for _, v := range vs {
		b = pbAppendMsg(b, num, func(b []byte) []byte { return put(b, v) })
	}
	return b
}

func msgString(b []byte, s string) []byte { return append(b, s...) }
func msgBytes(b []byte, s []byte) []byte  { return append(b, s...) }

func msgVector(b []byte, v Vector) []byte {
	b = pbFixed64(b, 1, math.Float64bits(v.X))
	b = pbFixed64(b, 2, math.Float64bits(v.Y))
	return pbFixed64(b, 3, math.Float64bits(v.Z))
}

func msgQuat(b []byte, q Quat) []byte {
	b = pbFixed32(b, 1, math.Float32bits(q.X))
	b = pbFixed32(b, 2, math.Float32bits(q.Y))
	b = pbFixed32(b, 3, math.Float32bits(q.Z))
	return pbFixed32(b, 4, math.Float32bits(q.W))
}

func msgTransform(b []byte, t Transform) []byte {
	b = pbAppendMsg(b, 1, func(b []byte) []byte { return msgVector(b, t.Translation) })
	b = pbAppendMsg(b, 2, func(b []byte) []byte { return msgQuat(b, t.Rotation) })
	return pbAppendMsg(b, 3, func(b []byte) []byte { return msgVector(b, t.Scale) })
}

func msgRange(b []byte, r FloatRange) []byte {
	b = pbFixed32(b, 1, math.Float32bits(r.Min))
	b = pbFixed32(b, 2, math.Float32bits(r.Max))
	return pbFixed32(b, 3, math.Float32bits(r.ValueNormalized))
}

// pbFlatMsg appends a Flat*Array field unless it is empty; data writes the
// data field (number 1).
func pbFlatMsg[T any](b []byte, num protowire.Number, a *FlatArray[T], data func([]byte, []T) []byte) []byte {
	if a.empty() {
		return b
	}
	return pbAppendMsg(b, num, func(b []byte) []byte {
		b = data(b, a.Data)
		return pbPacked(b, 2, a.Offsets, putU32)
	})
}

func packedData[T any](put func([]byte, T) []byte) func([]byte, []T) []byte {
	return func(b []byte, vs []T) []byte { return pbPacked(b, 1, vs, put) }
}

func repeatedData[T any](put func([]byte, T) []byte) func([]byte, []T) []byte {
	return func(b []byte, vs []T) []byte { return pbRepeated(b, 1, vs, put) }
}

func msgContainer(b []byte, p PropertyContainer) []byte {
	b = pbVarint(b, 1, uint64(int64(p.TypeID)))
	b = pbPacked(b, 2, p.Bools, putBool)
	b = pbPacked(b, 3, p.Int32s, putSint32)
	b = pbPacked(b, 4, p.Int64s, putSint64)
	b = pbPacked(b, 5, p.Floats, putFloat)
	b = pbPacked(b, 6, p.Doubles, putDouble)
	b = pbRepeated(b, 7, p.Strings, msgString)
	b = pbRepeated(b, 8, p.Transforms, msgTransform)
	b = pbRepeated(b, 9, p.Vectors, msgVector)
	b = pbRepeated(b, 10, p.Quats, msgQuat)
	b = pbRepeated(b, 11, p.Ranges, msgRange)
	b = pbFlatMsg(b, 12, p.ByteArrays, repeatedData(msgBytes))
	b = pbFlatMsg(b, 13, p.Int32Arrays, packedData(putSint32))
	b = pbFlatMsg(b, 14, p.Int64Arrays, packedData(putSint64))
	b = pbFlatMsg(b, 15, p.FloatArrays, packedData(putFloat))
	b = pbFlatMsg(b, 16, p.DoubleArrays, packedData(putDouble))
	b = pbFlatMsg(b, 17, p.VectorArrays, repeatedData(msgVector))
	b = pbFlatMsg(b, 18, p.QuatArrays, repeatedData(msgQuat))
	b = pbFlatMsg(b, 19, p.TransformArrays, repeatedData(msgTransform))
	b = pbFlatMsg(b, 20, p.RangeArrays, repeatedData(msgRange))
	b = pbFlatMsg(b, 21, p.BoolArrays, packedData(putBool))
	b = pbFlatMsg(b, 22, p.StringArrays, repeatedData(msgString))
	b = pbRepeated(b, 23, p.Structs, msgContainer)
	b = pbFlatMsg(b, 24, p.StructArrays, repeatedData(msgContainer))
	b = pbRepeated(b, 25, p.Maps, msgMap)
	b = pbFlatMsg(b, 26, p.MapArrays, repeatedData(msgMap))
	return pbVarint(b, 27, p.ContentHash)
}

func msgMap(b []byte, m MapContainer) []byte {
	b = pbRepeated(b, 1, m.Keys, msgString)
	return pbRepeated(b, 2, m.Values, msgContainer)
}

func msgEntityRange(b []byte, r EntityRange) []byte {
	b = pbVarint(b, 1, uint64(int64(r.Start)))
	return pbVarint(b, 2, uint64(int64(r.Count)))
}

func msgBucket(b []byte, bk Bucket) []byte {
	b = pbRepeated(b, 1, bk.UniqueIDs, msgString)
	b = pbRepeated(b, 2, bk.Entities, msgContainer)
	return pbRepeated(b, 3, bk.TypeRanges, msgEntityRange)
}

func msgFrame(b []byte, f Frame) []byte { return pbRepeated(b, 1, f.Buckets, msgBucket) }

// pbEncodeChunk appends a FrameChunk.
func pbEncodeChunk(b []byte, c *Chunk) []byte {
	b = pbVarint(b, 1, uint64(int64(c.Index)))
	if c.IsCompressed {
		b = pbVarint(b, 2, 1)
	}
	if len(c.CompressedData) > 0 {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, c.CompressedData)
	}
	b = pbRepeated(b, 4, c.Frames, msgFrame)
	return pbRepeated(b, 5, c.CompressedFrames, msgBytes)
}

// pbEncodeHeader appends a FileHeader.
func pbEncodeHeader(b []byte, h *Header) []byte {
	b = pbAppendMsg(b, 2, func(b []byte) []byte {
		b = pbVarint(b, 1, uint64(h.FormatMajor))
		b = pbVarint(b, 2, uint64(h.FormatMinor))
		return pbVarint(b, 3, uint64(h.SchemaVersion))
	})
	b = pbAppendMsg(b, 3, func(b []byte) []byte {
		b = pbString(b, 1, h.DataIdentifier)
		b = pbVarint(b, 2, uint64(int64(h.DataVersion)))
		b = pbString(b, 3, h.DataVersionString)
		return pbString(b, 4, h.Schema)
	})
	b = pbString(b, 4, h.ReplayUUID)
	b = pbString(b, 5, h.ReplayName)
	b = pbVarint(b, 6, uint64(h.RecordedUTC))
	return pbString(b, 7, h.CustomJSONMetadata)
}

// pbEncodeFooter appends a FileFooter.
func pbEncodeFooter(b []byte, f *Footer) []byte {
	b = pbVarint(b, 1, uint64(int64(f.TotalFrames)))
	b = pbFixed32(b, 2, math.Float32bits(f.DurationSeconds))
	b = pbAppendMsg(b, 3, func(b []byte) []byte {
		b = pbPacked(b, 1, f.GameTime, putU64)
		b = pbPacked(b, 2, f.CreatedUTC, putU64)
		b = pbPacked(b, 3, f.Gaps, putU32)
		return pbPacked(b, 4, f.Segments, putU32)
	})
	b = pbRepeated(b, 4, f.Chunks, func(b []byte, e IndexEntry) []byte {
		b = pbVarint(b, 1, uint64(int64(e.ChunkIndex)))
		b = pbVarint(b, 2, uint64(int64(e.StartFrame)))
		b = pbVarint(b, 3, uint64(int64(e.EndFrame)))
		b = pbVarint(b, 4, e.FileOffset)
		b = pbVarint(b, 5, uint64(e.Size))
		return pbVarint(b, 6, e.Checksum)
	})
	b = pbRepeated(b, 5, f.Events, func(b []byte, e TimelineEvent) []byte {
		b = pbFixed32(b, 1, math.Float32bits(e.GameTime))
		b = pbString(b, 2, e.EventType)
		b = pbString(b, 3, e.Label)
		b = pbAppendMsg(b, 4, func(b []byte) []byte { return msgVector(b, e.Location) })
		return pbString(b, 5, e.EntityUniqueID)
	})
	return pbVarint(b, 6, f.PayloadChecksum)
}
