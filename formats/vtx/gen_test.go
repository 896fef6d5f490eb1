// Tests on files made by our own writer: every property container type
// round trips through both backends, raw and compressed; bad input gives
// *formats.Error values with offsets; zstd bombs are refused before
// allocating; and the fuzz target.

package vtx

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/bounded"
)

// testSchema names two structs; Stats is nested in Unit.
const testSchema = `{"version":"2.0","buckets":["entity","bones"],"property_mapping":[
 {"struct":"Unit","values":[
  {"name":"UniqueID","typeId":"String","containerType":"None"},
  {"name":"Name","typeId":"String","containerType":"None"},
  {"name":"Alive","typeId":"Bool","containerType":"None"},
  {"name":"Level","typeId":"Int32","containerType":"None"},
  {"name":"Gold","typeId":"Int64","containerType":"None"},
  {"name":"Speed","typeId":"Float","containerType":"None"},
  {"name":"Mass","typeId":"Double","containerType":"None"},
  {"name":"Pose","typeId":"Transform","containerType":"None"},
  {"name":"Position","typeId":"Vector","containerType":"None"},
  {"name":"Facing","typeId":"Quat","containerType":"None"},
  {"name":"Charge","typeId":"FloatRange","containerType":"None"},
  {"name":"Blob","typeId":"UInt8","containerType":"Array"},
  {"name":"Scores","typeId":"Int32","containerType":"Array"},
  {"name":"Stamps","typeId":"Int64","containerType":"Array"},
  {"name":"Heat","typeId":"Float","containerType":"Array"},
  {"name":"Precise","typeId":"Double","containerType":"Array"},
  {"name":"Path","typeId":"Vector","containerType":"Array"},
  {"name":"Spins","typeId":"Quat","containerType":"Array"},
  {"name":"Bones","typeId":"Transform","containerType":"Array"},
  {"name":"Bands","typeId":"Range","containerType":"Array"},
  {"name":"Flags","typeId":"Bool","containerType":"Array"},
  {"name":"Tags","typeId":"String","containerType":"Array"},
  {"name":"Stats","typeId":"Struct","structType":"Stats","containerType":"None"},
  {"name":"History","typeId":"Struct","structType":"Stats","containerType":"Array"},
  {"name":"Inventory","typeId":"Struct","structType":"Stats","keyId":"String","containerType":"Map"}]},
 {"struct":"Stats","values":[
  {"name":"Kills","typeId":"Int32","containerType":"None"},
  {"name":"Ratio","typeId":"Float","containerType":"None"}]}]}`

func testHeader() *Header {
	return &Header{FormatMajor: 1, FormatMinor: 0, SchemaVersion: 3, DataIdentifier: "VTX_GameData", DataVersion: 1,
		DataVersionString: "1.0.0", Schema: testSchema, ReplayUUID: "test-uuid-0001", ReplayName: "generated",
		RecordedUTC: 1778686596, CustomJSONMetadata: `{"map":"arena"}`}
}

func stats(k int32) PropertyContainer {
	return PropertyContainer{TypeID: 1, Int32s: []int32{k}, Floats: []float32{float32(k) / 2}}
}

// testFrame returns frame i with every container type set.
func testFrame(i int) Frame {
	f := float32(i)
	v := Vector{float64(i), -1.5, 1e300}
	q := Quat{0, 0.5, f, 1}
	tr := Transform{v, q, Vector{1, 1, 1}}
	r := FloatRange{0, 100, 0.25}
	u := PropertyContainer{
		TypeID: 0, Bools: []bool{i%2 == 0}, Int32s: []int32{int32(-i)}, Int64s: []int64{-1 << 40},
		Floats: []float32{f * 1.5}, Doubles: []float64{math.Pi}, Strings: []string{"unit_1", "Ünït"},
		Transforms: []Transform{tr}, Vectors: []Vector{v}, Quats: []Quat{q}, Ranges: []FloatRange{r},
		ByteArrays:      &FlatArray[[]byte]{Data: [][]byte{{1, 2, 3, 4}}, Offsets: []uint32{0}},
		Int32Arrays:     &FlatArray[int32]{Data: []int32{1, -2, 3}, Offsets: []uint32{0}},
		Int64Arrays:     &FlatArray[int64]{Data: []int64{1 << 50, -7}, Offsets: []uint32{0}},
		FloatArrays:     &FlatArray[float32]{Data: []float32{0.5, f}, Offsets: []uint32{0}},
		DoubleArrays:    &FlatArray[float64]{Data: []float64{2.5}, Offsets: []uint32{0}},
		VectorArrays:    &FlatArray[Vector]{Data: []Vector{v, v}, Offsets: []uint32{0}},
		QuatArrays:      &FlatArray[Quat]{Data: []Quat{q}, Offsets: []uint32{0}},
		TransformArrays: &FlatArray[Transform]{Data: []Transform{tr, tr}, Offsets: []uint32{0}},
		RangeArrays:     &FlatArray[FloatRange]{Data: []FloatRange{r}, Offsets: []uint32{0}},
		BoolArrays:      &FlatArray[bool]{Data: []bool{true, false, true}, Offsets: []uint32{0}},
		StringArrays:    &FlatArray[string]{Data: []string{"a", "b"}, Offsets: []uint32{0}},
		Structs:         []PropertyContainer{stats(int32(i))},
		StructArrays:    &FlatArray[PropertyContainer]{Data: []PropertyContainer{stats(1), stats(2)}, Offsets: []uint32{0}},
		Maps:            []MapContainer{{Keys: []string{"sword", "shield"}, Values: []PropertyContainer{stats(3), stats(4)}}},
		MapArrays:       &FlatArray[MapContainer]{Data: []MapContainer{{Keys: []string{"k"}, Values: []PropertyContainer{stats(5)}}}, Offsets: []uint32{0}},
		ContentHash:     uint64(i) * 0x9E3779B97F4A7C15,
	}
	other := PropertyContainer{TypeID: 0, Strings: []string{"unit_2", "Bob"}, Int32s: []int32{7}}
	return Frame{Buckets: []Bucket{
		{UniqueIDs: []string{"unit_1", "unit_2"}, Entities: []PropertyContainer{u, other}, TypeRanges: []EntityRange{{0, 2}}},
		{UniqueIDs: []string{"bone"}, Entities: []PropertyContainer{{TypeID: 1, Int32s: []int32{1}}}},
	}}
}

// genFile writes n test frames at 60 fps.
func genFile(t testing.TB, b Backend, n int, opts *WriterOptions) ([]byte, []Frame) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, b, testHeader(), opts)
	if err != nil {
		t.Fatal(err)
	}
	frames := make([]Frame, n)
	for i := range frames {
		frames[i] = testFrame(i)
		if err := w.WriteFrame(&frames[i], uint64(i)*TicksPerSecond/60, 17786865968900776+uint64(i)*166666); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), frames
}

func TestWriterRoundTrip(t *testing.T) {
	for _, b := range []Backend{Protobuf, FlatBuffers} {
		for _, raw := range []bool{false, true} {
			name := b.String()
			if raw {
				name += "/raw"
			}
			t.Run(name, func(t *testing.T) {
				data, frames := genFile(t, b, 25, &WriterOptions{ChunkFrames: 10, NoCompression: raw})
				f, err := ReadFile(context.Background(), bytes.NewReader(data), 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(f.Warnings) != 0 || len(f.Chunks) != 3 || f.Frames() != 25 {
					t.Fatalf("warnings %v chunks %d frames %d", f.Warnings, len(f.Chunks), f.Frames())
				}
				if !reflect.DeepEqual(f.Header, testHeader()) {
					t.Errorf("header %+v", f.Header)
				}
				var got []Frame
				for _, c := range f.Chunks {
					got = append(got, c.Frames...)
				}
				if !reflect.DeepEqual(got, frames) {
					t.Errorf("frames differ:\n got %+v\nwant %+v", got[1].Buckets[0].Entities[0], frames[1].Buckets[0].Entities[0])
				}
				ft := f.Footer
				if ft.TotalFrames != 25 || len(ft.Chunks) != 3 || ft.Chunks[2] != (IndexEntry{ChunkIndex: 2, StartFrame: 20, EndFrame: 24,
					FileOffset: ft.Chunks[2].FileOffset, Size: ft.Chunks[2].Size}) || absf(float64(ft.DurationSeconds)-0.4) > 1e-6 {
					t.Errorf("footer %+v", ft)
				}
				// Compression rule: blobs under 512 bytes stay raw, the others
				// are zstd only when smaller.
				rec := formatstest.Split(t, Codec{}, data)
				for i, c := range rec.ChunkIndex {
					if c.Precompressed == raw {
						t.Errorf("chunk %d precompressed = %v", i, c.Precompressed)
					}
				}
				if raw == bounded.IsZstd(rec.HeaderData[8:]) {
					t.Errorf("header zstd = %v", !raw)
				}
				m := rec.Metadata
				if m.Session != "test-uuid-0001" || m.Ticks != 25 || m.TickRate != 60 || len(m.Players) != 3 ||
					m.Players[0] != (formats.Player{Name: "Ünït", ID: "unit_1", Team: "Unit"}) ||
					m.Players[2] != (formats.Player{Name: "bone", ID: "bone", Team: "Stats"}) ||
					m.Attrs["custom_json_metadata"] != `{"map":"arena"}` || m.Attrs["schema_json_version"] != "2.0" {
					t.Errorf("metadata %+v", m)
				}
			})
		}
	}
}

// TestCompressionRule checks the SDK's rule: blobs under 512 bytes stay
// raw, larger ones are zstd frames that declare their content size.
func TestCompressionRule(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Protobuf, &Header{ReplayUUID: "tiny"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	small := Frame{Buckets: []Bucket{{UniqueIDs: []string{"a"}, Entities: []PropertyContainer{{Int32s: []int32{1}}}}}}
	if err := w.WriteFrame(&small, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec := formatstest.Split(t, Codec{}, buf.Bytes())
	tr := rec.TrailerData
	for i, blob := range [][]byte{rec.HeaderData[8:], rec.ChunkBytes[0][4:], tr[:len(tr)-8]} {
		if bounded.IsZstd(blob) || len(blob) >= MinCompressSize {
			t.Errorf("blob %d: %d bytes, zstd %v", i, len(blob), bounded.IsZstd(blob))
		}
	}
	data, _ := genFile(t, FlatBuffers, 30, &WriterOptions{ChunkFrames: 10})
	rec = formatstest.Split(t, Codec{}, data)
	for i, c := range rec.ChunkBytes {
		var h zstd.Header
		if err := h.Decode(c[4:]); err != nil || !h.HasFCS || h.FrameContentSize == 0 {
			t.Errorf("chunk %d: zstd header %+v: %v", i, h, err)
		}
	}
}

func TestFrameJSONNames(t *testing.T) {
	s, err := ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []Backend{Protobuf, FlatBuffers} {
		data, _ := genFile(t, b, 3, nil)
		rec := formatstest.Split(t, Codec{}, data)
		var fd FrameData
		if err := (Codec{}).Frames(context.Background(), rec.Source(), formats.Ticks(2, 2), func(f formats.Frame) error {
			fd = f.Data.(FrameData)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		e := fd.Buckets[0].Entities[0]
		for _, k := range []string{"UniqueID", "Name", "Alive", "Level", "Gold", "Speed", "Mass", "Pose", "Position", "Facing",
			"Charge", "Blob", "Scores", "Stamps", "Heat", "Precise", "Path", "Spins", "Bones", "Bands", "Flags", "Tags",
			"Stats", "History", "Inventory"} {
			if _, ok := e.Props[k]; !ok {
				t.Errorf("%v: property %q missing: %v", b, k, e.Props)
			}
		}
		if st := e.Props["Stats"].(EntityData); st.Type != "Stats" || st.Props["Kills"] != int32(2) {
			t.Errorf("%v: nested struct %+v", b, st)
		}
		if inv := e.Props["Inventory"].(map[string]EntityData); inv["shield"].Props["Kills"] != int32(4) {
			t.Errorf("%v: map %+v", b, inv)
		}
		if blob := e.Props["Blob"]; !bytes.Equal(blob.([]byte), []byte{1, 2, 3, 4}) {
			t.Errorf("%v: blob %v", b, blob)
		}
		if _, err := json.Marshal(fd); err != nil {
			t.Error(err)
		}
	}
	if st := s.Struct(0); st.SlotName(KindFloatArray, 0) != "Heat" || st.SlotName(KindFloat, 5) != "float[5]" {
		t.Error("slot names")
	}
	// Non-finite floats still marshal.
	fr := Frame{Buckets: []Bucket{{Entities: []PropertyContainer{{Floats: []float32{float32(math.NaN())}, Doubles: []float64{math.Inf(-1)}}}}}}
	if js, err := json.Marshal(s.FrameJSON(&fr)); err != nil || !bytes.Contains(js, []byte(`"NaN"`)) {
		t.Errorf("%s: %v", js, err)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{{"VTXP\x10\x00\x00\x00", true}, {"VTXF", true}, {"VTXZ", false}, {"VTX", false}, {"", false}, {"vtxp", false}} {
		if got := (Codec{}).Detect([]byte(tc.head)); got != tc.want {
			t.Errorf("Detect(%q) = %v", tc.head, got)
		}
	}
}

func TestMissingFooterGenerated(t *testing.T) {
	for _, b := range []Backend{Protobuf, FlatBuffers} {
		data, _ := genFile(t, b, 25, &WriterOptions{ChunkFrames: 10})
		f := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
		rec := formatstest.Split(t, Codec{}, data[:len(data)-8-f])
		if len(rec.ChunkIndex) != 3 || rec.Metadata.Ticks != 25 || len(rec.Metadata.Warnings) != 1 {
			t.Errorf("%v: %d chunks %+v", b, len(rec.ChunkIndex), rec.Metadata)
		}
	}
}

// TestRawFooterSmallFirstWord: a raw FlatBuffers footer starts with a small
// root offset, which reads like a chunk size; the scanner must still find it.
func TestRawFooterSmallFirstWord(t *testing.T) {
	data, _ := genFile(t, FlatBuffers, 2, &WriterOptions{NoCompression: true})
	rec := formatstest.Split(t, Codec{}, data)
	if len(rec.TrailerData) == 0 || len(rec.Metadata.Warnings) != 0 || rec.Metadata.Ticks != 2 {
		t.Fatalf("trailer %d, %+v", len(rec.TrailerData), rec.Metadata)
	}
	if first := binary.LittleEndian.Uint32(rec.TrailerData); first > 1024 {
		t.Logf("footer's first word %d (not small; the test still passes)", first)
	}
}

func wantError(t *testing.T, data []byte, offset int64, what string) {
	t.Helper()
	_, err := formatstest.TrySplit(Codec{}, data)
	var fe *formats.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v, want *formats.Error", err)
	}
	if fe.Offset != offset || !strings.Contains(err.Error(), what) {
		t.Errorf("error %q at %d, want %q at %d", err, fe.Offset, what, offset)
	}
}

func TestBadInputTargeted(t *testing.T) {
	data, _ := genFile(t, Protobuf, 25, &WriterOptions{ChunkFrames: 10, NoCompression: true})
	h := int64(binary.LittleEndian.Uint32(data[4:]))
	c0 := 8 + h // first chunk's size field
	s0 := int64(binary.LittleEndian.Uint32(data[c0:]))
	wantError(t, nil, 0, "file ends after 0 bytes")
	wantError(t, []byte("VTXQ\x00\x00\x00\x00"), 0, "expected magic")
	wantError(t, data[:100], 100, "header declares")
	wantError(t, data[:c0+2], c0, "expected a chunk's u32 size or the footer")
	wantError(t, data[:c0+40], c0+40, "chunk at offset")
	// A bit flip in a chunk's first field tag (chunk_index varint → a
	// length-delimited field whose length runs out).
	bad := bytes.Clone(data)
	bad[c0+4] ^= 0x02
	wantError(t, bad, c0+4, "chunk 0 blob")
	// A chunk size pointing past the end.
	bad = bytes.Clone(data)
	binary.LittleEndian.PutUint32(bad[c0:], uint32(s0+1<<20))
	wantError(t, bad, int64(len(bad)), "declares")
	// The closing magic damaged.
	bad = bytes.Clone(data)
	bad[len(bad)-1] = 'X'
	wantError(t, bad, int64(len(bad)-4), "closing magic")
	// A header claiming more than the limit.
	bad = bytes.Clone(data)
	binary.LittleEndian.PutUint32(bad[4:], 1<<31)
	wantError(t, bad, 4, "exceeds the limit")
}

func TestBadInputStride(t *testing.T) {
	data, _ := genFile(t, Protobuf, 6, &WriterOptions{ChunkFrames: 4, NoCompression: true})
	t.Logf("protobuf raw: %d of %d variants errored", formatstest.CheckBadInput(t, Codec{}, data, 7), 2*len(data)/7)
	data, _ = genFile(t, FlatBuffers, 6, &WriterOptions{ChunkFrames: 4, NoCompression: true})
	t.Logf("flatbuffers raw: %d errored", formatstest.CheckBadInput(t, Codec{}, data, 9))
	data, _ = genFile(t, FlatBuffers, 6, &WriterOptions{ChunkFrames: 4})
	formatstest.CheckBadInput(t, Codec{}, data, 13)
	if d, err := os.ReadFile(filepath.Join(formatstest.CorpusDir(t, "vtx"), "post_processed.vtx")); err == nil {
		formatstest.CheckBadInput(t, Codec{}, d, 11)
	}
}

// zstdFrame builds a single-segment zstd frame header declaring fcs bytes,
// followed by one raw block of the given payload.
func zstdFrame(fcs uint64, payload []byte) []byte {
	b := []byte(bounded.ZstdMagic)
	b = append(b, 0xE0) // FCS field 8 bytes, single segment
	b = binary.LittleEndian.AppendUint64(b, fcs)
	bh := uint32(len(payload))<<3 | 1 // last block, raw
	b = append(b, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(b, payload...)
}

func TestZstdBomb(t *testing.T) {
	d := NewDecoder(1 << 20)
	defer d.Close()
	// A frame declaring a terabyte is refused before anything is allocated.
	if _, err := d.Unpack(zstdFrame(1<<40, []byte("x"))); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("huge declared size: %v", err)
	}
	// A real bomb: 64 MiB of zeros compress to a few KiB.
	enc, _ := zstd.NewWriter(nil)
	bomb := enc.EncodeAll(make([]byte, 64<<20), nil)
	enc.Close()
	if _, err := d.Unpack(bomb); err == nil {
		t.Error("64 MiB bomb accepted with a 1 MiB limit")
	}
	// A frame that lies about its size (declares 4, holds 1).
	if _, err := d.Unpack(zstdFrame(4, []byte("x"))); err == nil {
		t.Error("lying frame accepted")
	}
	// A streamed frame without a content size is refused, as the SDK does.
	noFCS := append([]byte(bounded.ZstdMagic), 0x00, 0x00, 1<<3|1, 0, 0, 'x')
	if _, err := d.Unpack(noFCS); err == nil || !strings.Contains(err.Error(), "content size") {
		t.Errorf("frame without content size: %v", err)
	}
	// The bomb as a VTX header blob.
	file := append([]byte("VTXP"), binary.LittleEndian.AppendUint32(nil, uint32(len(bomb)))...)
	file = append(file, bomb...)
	if _, err := formatstest.TrySplit(Codec{MaxBlobSize: 1 << 20}, file); err == nil {
		t.Error("split accepted a bomb header")
	}
}

func FuzzReader(f *testing.F) {
	for _, b := range []Backend{Protobuf, FlatBuffers} {
		for _, raw := range []bool{true, false} {
			data, _ := genFile(f, b, 3, &WriterOptions{ChunkFrames: 2, NoCompression: raw})
			f.Add(data)
		}
	}
	f.Add([]byte("VTXP\x00\x00\x00\x00"))
	// lying sizes: a chunk claiming 200 MiB over 100 bytes, a zstd header
	// blob declaring 200 MiB of content in a few bytes
	if good, _ := genFile(f, Protobuf, 3, &WriterOptions{ChunkFrames: 2}); len(good) > 8 {
		hlen := 8 + int(binary.LittleEndian.Uint32(good[4:]))
		lying := binary.LittleEndian.AppendUint32(append([]byte{}, good[:hlen]...), 200<<20)
		f.Add(append(lying, make([]byte, 100)...))
	}
	z := zstdFrame(200<<20, []byte("tiny"))
	f.Add(append(binary.LittleEndian.AppendUint32([]byte("VTXF"), uint32(len(z))), z...))
	if d, err := os.ReadFile(filepath.Join(formatstest.ModuleRoot(f), "..", "shared", "corpus", "vtx", "post_processed.vtx")); err == nil {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Codec{MaxBlobSize: 1 << 20, MaxPlayers: 16}
		rec, err := formatstest.TrySplit(c, data)
		if err != nil {
			return
		}
		_ = c.Frames(context.Background(), rec.Source(), formats.All(), func(fr formats.Frame) error {
			_, err := json.Marshal(fr)
			if err != nil {
				t.Fatalf("frame %d does not marshal: %v", fr.Tick, err)
			}
			return nil
		})
	})
}

func TestEmptyRecording(t *testing.T) {
	for _, b := range []Backend{Protobuf, FlatBuffers} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, b, testHeader(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rec := formatstest.Split(t, Codec{}, buf.Bytes())
		if len(rec.ChunkIndex) != 0 || len(rec.TrailerData) == 0 || rec.Metadata.Ticks != 0 || len(rec.Metadata.Warnings) != 0 {
			t.Errorf("%v: %d chunks, trailer %d, %+v", b, len(rec.ChunkIndex), len(rec.TrailerData), rec.Metadata)
		}
		if err := (Codec{}).Clip(context.Background(), rec.Source(), formats.All(), &bytes.Buffer{}); !errors.Is(err, ErrEmptyRange) {
			t.Errorf("%v: clip of an empty recording: %v", b, err)
		}
	}
}
