// This file holds the Go model of a VTX file: the header, chunk, frame,
// property container and footer messages shared by both backends.

package vtx

// Backend is the serialization a VTX file uses, named by its magic.
type Backend byte

// The two backends. Their values are the fourth byte of the magic.
const (
	Protobuf    Backend = 'P' // "VTXP"
	FlatBuffers Backend = 'F' // "VTXF"
)

// String returns the backend's name.
func (b Backend) String() string {
	switch b {
	case Protobuf:
		return "protobuf"
	case FlatBuffers:
		return "flatbuffers"
	}
	return "unknown"
}

// Magic returns the four magic bytes of the backend.
func (b Backend) Magic() [4]byte { return [4]byte{'V', 'T', 'X', byte(b)} }

// Header is the FileHeader message, with its VersionInfo and
// ContextualSchema flattened in.
type Header struct {
	FormatMajor   uint32
	FormatMinor   uint32
	SchemaVersion uint32

	// DataIdentifier, DataVersion, DataVersionString and Schema are the
	// ContextualSchema; Schema is the schema JSON text.
	DataIdentifier    string
	DataVersion       int32
	DataVersionString string
	Schema            string

	ReplayUUID string
	ReplayName string
	// RecordedUTC is seconds since the Unix epoch.
	RecordedUTC        int64
	CustomJSONMetadata string
}

// Footer is the FileFooter message.
type Footer struct {
	TotalFrames     int32
	DurationSeconds float32
	// GameTime and CreatedUTC are per frame, in 100-ns ticks (CreatedUTC
	// since the Unix epoch).
	GameTime        []uint64
	CreatedUTC      []uint64
	Gaps            []uint32
	Segments        []uint32
	Chunks          []IndexEntry
	Events          []TimelineEvent
	PayloadChecksum uint64
}

// IndexEntry is one ChunkIndexEntry of the footer. FileOffset is the offset
// of the chunk's u32 size field; Size counts that field too. StartFrame and
// EndFrame are inclusive.
type IndexEntry struct {
	ChunkIndex int32
	StartFrame int32
	EndFrame   int32
	FileOffset uint64
	Size       uint32
	Checksum   uint64
}

// TimelineEvent is one footer event.
type TimelineEvent struct {
	GameTime       float32
	EventType      string
	Label          string
	Location       Vector
	EntityUniqueID string
}

// Chunk is a FrameChunk (protobuf) or Chunk (FlatBuffers) message.
type Chunk struct {
	Index            int32
	IsCompressed     bool
	CompressedData   []byte
	Frames           []Frame
	CompressedFrames [][]byte
}

// Frame is one full snapshot: a list of buckets of entities.
type Frame struct {
	Buckets []Bucket
}

// Bucket holds entities and their unique ids, in the same order.
type Bucket struct {
	UniqueIDs  []string
	Entities   []PropertyContainer
	TypeRanges []EntityRange
}

// EntityRange says which entities of a bucket have one type.
type EntityRange struct {
	Start int32
	Count int32
}

// Vector is three doubles.
type Vector struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	Z float64 `json:"z"`
}

// Quat is a quaternion of floats.
type Quat struct{ X, Y, Z, W float32 }

// Transform is translation, rotation and scale.
type Transform struct {
	Translation Vector
	Rotation    Quat
	Scale       Vector
}

// FloatRange is a min/max range with a normalized value.
type FloatRange struct{ Min, Max, ValueNormalized float32 }

// FlatArray is the structure-of-arrays container of array properties:
// property k holds Data[Offsets[k]:Offsets[k+1]] (the last one up to the
// end of Data).
type FlatArray[T any] struct {
	Data    []T
	Offsets []uint32
}

// Len returns the number of array properties a holds.
func (a *FlatArray[T]) Len() int {
	if a == nil {
		return 0
	}
	return len(a.Offsets)
}

// At returns array property k, or nil when the offsets are out of range.
func (a *FlatArray[T]) At(k int) []T {
	if a == nil || k < 0 || k >= len(a.Offsets) {
		return nil
	}
	lo, hi := int(a.Offsets[k]), len(a.Data)
	if k+1 < len(a.Offsets) {
		hi = int(a.Offsets[k+1])
	}
	if lo > hi || hi > len(a.Data) {
		return nil
	}
	return a.Data[lo:hi]
}

func (a *FlatArray[T]) empty() bool { return a == nil || len(a.Data) == 0 && len(a.Offsets) == 0 }

// MapContainer is one map property: parallel keys and values.
type MapContainer struct {
	Keys   []string
	Values []PropertyContainer
}

// PropertyContainer is one entity (or nested struct): its type id and one
// slice per property kind. The schema names the slots.
type PropertyContainer struct {
	TypeID     int32
	Bools      []bool
	Int32s     []int32
	Int64s     []int64
	Floats     []float32
	Doubles    []float64
	Strings    []string
	Transforms []Transform
	Vectors    []Vector
	Quats      []Quat
	Ranges     []FloatRange

	// The array properties are nil when absent. ByteArrays holds one
	// []byte per element in protobuf files; a FlatBuffers file stores a
	// single byte vector, read as one element.
	ByteArrays      *FlatArray[[]byte]
	Int32Arrays     *FlatArray[int32]
	Int64Arrays     *FlatArray[int64]
	FloatArrays     *FlatArray[float32]
	DoubleArrays    *FlatArray[float64]
	VectorArrays    *FlatArray[Vector]
	QuatArrays      *FlatArray[Quat]
	TransformArrays *FlatArray[Transform]
	RangeArrays     *FlatArray[FloatRange]
	BoolArrays      *FlatArray[bool]
	StringArrays    *FlatArray[string]

	Structs      []PropertyContainer
	StructArrays *FlatArray[PropertyContainer]
	Maps         []MapContainer
	MapArrays    *FlatArray[MapContainer]

	ContentHash uint64
}
