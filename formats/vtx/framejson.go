// This file turns decoded frames into JSON-ready values whose properties are
// named by the embedded schema. Non-finite floats become strings ("NaN",
// "+Inf", "-Inf") so every frame marshals.

package vtx

import (
	"math"
	"strconv"
)

// FrameData is the Data of a formats.Frame of type "frame".
type FrameData struct {
	// GameTime is seconds of game time (from the footer; absent when the
	// file has no footer).
	GameTime *Num `json:"game_time,omitempty"`
	// CreatedUTC is 100-ns ticks since the Unix epoch, when known.
	CreatedUTC uint64       `json:"created_utc,omitempty"`
	Buckets    []BucketData `json:"buckets"`
}

// BucketData is one bucket of a frame.
type BucketData struct {
	Name     string       `json:"name,omitempty"`
	Entities []EntityData `json:"entities"`
}

// EntityData is one entity (or nested struct) with named properties.
type EntityData struct {
	ID    string         `json:"id,omitempty"`
	Type  string         `json:"type"`
	Props map[string]any `json:"props,omitempty"`
}

// Num is a float64 that marshals non-finite values as strings.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) { return appendNum(nil, float64(n), 64), nil }

// Num32 is a float32 that marshals with float32 precision and non-finite
// values as strings.
type Num32 float32

// MarshalJSON implements json.Marshaler.
func (n Num32) MarshalJSON() ([]byte, error) { return appendNum(nil, float64(n), 32), nil }

func appendNum(b []byte, v float64, bits int) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Inf"`...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, bits)
}

// VectorJSON, QuatJSON, TransformJSON and RangeJSON are the JSON forms of
// the math structs.
type (
	VectorJSON struct {
		X, Y, Z Num
	}
	QuatJSON struct {
		X, Y, Z, W Num32
	}
	TransformJSON struct {
		Translation VectorJSON
		Rotation    QuatJSON
		Scale       VectorJSON
	}
	RangeJSON struct {
		Min, Max, ValueNormalized Num32
	}
)

func vecJSON(v Vector) VectorJSON { return VectorJSON{Num(v.X), Num(v.Y), Num(v.Z)} }
func quatJSON(q Quat) QuatJSON    { return QuatJSON{Num32(q.X), Num32(q.Y), Num32(q.Z), Num32(q.W)} }
func transformJSON(t Transform) TransformJSON {
	return TransformJSON{vecJSON(t.Translation), quatJSON(t.Rotation), vecJSON(t.Scale)}
}
func rangeJSON(r FloatRange) RangeJSON {
	return RangeJSON{Num32(r.Min), Num32(r.Max), Num32(r.ValueNormalized)}
}

func mapSlice[T, U any](v []T, f func(T) U) []U {
	out := make([]U, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

func ident[T any](v T) T            { return v }
func num32(v float32) Num32         { return Num32(v) }
func num64(v float64) Num           { return Num(v) }
func bytesJSON(b []byte) []byte     { return b }
func numList32(v []float32) []Num32 { return mapSlice(v, num32) }

// FrameJSON converts a frame to its JSON form.
func (s *Schema) FrameJSON(f *Frame) FrameData {
	out := FrameData{Buckets: make([]BucketData, len(f.Buckets))}
	for i := range f.Buckets {
		bk := &f.Buckets[i]
		bd := BucketData{Name: s.BucketName(i), Entities: make([]EntityData, len(bk.Entities))}
		for j := range bk.Entities {
			bd.Entities[j] = s.entityJSON(&bk.Entities[j], -1)
			if j < len(bk.UniqueIDs) {
				bd.Entities[j].ID = bk.UniqueIDs[j]
			}
		}
		out.Buckets[i] = bd
	}
	return out
}

// entityJSON converts a container; typeID >= 0 overrides the container's
// own type id (nested structs named by the schema's structType).
func (s *Schema) entityJSON(p *PropertyContainer, typeID int) EntityData {
	tid := p.TypeID
	if typeID >= 0 {
		tid = int32(typeID)
	}
	st := s.Struct(tid)
	e := EntityData{Type: s.TypeName(tid), Props: map[string]any{}}
	put := func(k Kind, i int, v any) { e.Props[st.SlotName(k, i)] = v }
	for i, v := range p.Bools {
		put(KindBool, i, v)
	}
	for i, v := range p.Int32s {
		put(KindInt32, i, v)
	}
	for i, v := range p.Int64s {
		put(KindInt64, i, v)
	}
	for i, v := range p.Floats {
		put(KindFloat, i, Num32(v))
	}
	for i, v := range p.Doubles {
		put(KindDouble, i, Num(v))
	}
	for i, v := range p.Strings {
		put(KindString, i, v)
	}
	for i, v := range p.Transforms {
		put(KindTransform, i, transformJSON(v))
	}
	for i, v := range p.Vectors {
		put(KindVector, i, vecJSON(v))
	}
	for i, v := range p.Quats {
		put(KindQuat, i, quatJSON(v))
	}
	for i, v := range p.Ranges {
		put(KindRange, i, rangeJSON(v))
	}
	// Byte arrays: one element per property in protobuf files; a single
	// flat byte vector cut by the offsets in FlatBuffers files.
	if p.ByteArrays != nil && len(p.ByteArrays.Data) == 1 && len(p.ByteArrays.Offsets) > 0 {
		flat := FlatArray[byte]{Data: p.ByteArrays.Data[0], Offsets: p.ByteArrays.Offsets}
		flatJSON(&flat, KindByteArray, put, bytesJSON)
	} else {
		for i := 0; p.ByteArrays != nil && i < len(p.ByteArrays.Data); i++ {
			put(KindByteArray, i, p.ByteArrays.Data[i])
		}
	}
	flatJSON(p.Int32Arrays, KindInt32Array, put, ident[[]int32])
	flatJSON(p.Int64Arrays, KindInt64Array, put, ident[[]int64])
	flatJSON(p.FloatArrays, KindFloatArray, put, numList32)
	flatJSON(p.DoubleArrays, KindDoubleArray, put, func(v []float64) []Num { return mapSlice(v, num64) })
	flatJSON(p.VectorArrays, KindVectorArray, put, func(v []Vector) []VectorJSON { return mapSlice(v, vecJSON) })
	flatJSON(p.QuatArrays, KindQuatArray, put, func(v []Quat) []QuatJSON { return mapSlice(v, quatJSON) })
	flatJSON(p.TransformArrays, KindTransformArray, put, func(v []Transform) []TransformJSON { return mapSlice(v, transformJSON) })
	flatJSON(p.RangeArrays, KindRangeArray, put, func(v []FloatRange) []RangeJSON { return mapSlice(v, rangeJSON) })
	flatJSON(p.BoolArrays, KindBoolArray, put, ident[[]bool])
	flatJSON(p.StringArrays, KindStringArray, put, ident[[]string])
	for i := range p.Structs {
		put(KindStruct, i, s.entityJSON(&p.Structs[i], s.childType(st, KindStruct, i)))
	}
	for k := 0; k < p.StructArrays.Len(); k++ {
		items := p.StructArrays.At(k)
		out := make([]EntityData, len(items))
		for j := range items {
			out[j] = s.entityJSON(&items[j], s.childType(st, KindStructArray, k))
		}
		put(KindStructArray, k, out)
	}
	for i := range p.Maps {
		put(KindMap, i, s.mapJSON(&p.Maps[i], s.childType(st, KindMap, i)))
	}
	for k := 0; k < p.MapArrays.Len(); k++ {
		items := p.MapArrays.At(k)
		out := make([]map[string]EntityData, len(items))
		for j := range items {
			out[j] = s.mapJSON(&items[j], -1)
		}
		e.Props["map[]["+strconv.Itoa(k)+"]"] = out
	}
	if len(e.Props) == 0 {
		e.Props = nil
	}
	return e
}

func (s *Schema) mapJSON(m *MapContainer, typeID int) map[string]EntityData {
	out := make(map[string]EntityData, len(m.Keys))
	for i := range m.Values {
		k := strconv.Itoa(i)
		if i < len(m.Keys) {
			k = m.Keys[i]
		}
		out[k] = s.entityJSON(&m.Values[i], typeID)
	}
	return out
}

// childType returns the type id of the struct named by the structType of
// slot (k, i) of st, or -1 to use the container's own type id.
func (s *Schema) childType(st *Struct, k Kind, i int) int {
	if st == nil {
		return -1
	}
	for _, f := range st.Fields {
		if f.Kind == k && f.Index == i && f.StructType != "" {
			if id, ok := s.byName[f.StructType]; ok {
				return id
			}
		}
	}
	return -1
}

func flatJSON[T, U any](a *FlatArray[T], k Kind, put func(Kind, int, any), conv func([]T) U) {
	for i := 0; i < a.Len(); i++ {
		put(k, i, conv(a.At(i)))
	}
}
