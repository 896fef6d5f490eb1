package archive

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleChunks() []ChunkEntry {
	return []ChunkEntry{
		{StartTick: 0, Ticks: 3200, Time: 0, Offset: 3100, Length: 65536, Stored: 20011, CRC: 0xdeadbeef},
		{StartTick: 3200, Ticks: 3190, Time: 64 * time.Second, Offset: 68636, Length: 65530, Stored: 19876, CRC: 1},
		// A gap in ticks, a precompressed chunk, a time going back.
		{StartTick: 9000, Ticks: 0, Time: 60 * time.Second, Offset: 134166, Length: 12, Stored: 14, CRC: 0xffffffff, Precompressed: true},
		{StartTick: -5 + 1<<40, Ticks: 1, Time: -time.Second, Offset: 134178, Length: 0, Stored: 2},
	}
}

func TestChunkTableRoundTrip(t *testing.T) {
	for _, chunks := range [][]ChunkEntry{nil, {}, sampleChunks()} {
		b := appendChunkTable(nil, chunks)
		got, err := decodeChunkTable(b)
		if err != nil {
			t.Fatalf("decode %d chunks: %v", len(chunks), err)
		}
		if len(got) != len(chunks) || (len(got) > 0 && !reflect.DeepEqual(got, chunks)) {
			t.Errorf("round trip: got %+v, want %+v", got, chunks)
		}
	}
}

// TestManifestJSON checks that a manifest stores its chunks as a binary
// table, reads it back, and still reads a manifest with a JSON chunk list.
func TestManifestJSON(t *testing.T) {
	m := &Manifest{Format: "teehistorian", Shard: "2026-01", NativeBytes: 134178, Chunks: sampleChunks()}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"chunks"`) || !strings.Contains(string(b), `"ct":`) {
		t.Errorf("manifest JSON is not using the binary table: %s", b)
	}
	var back Manifest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Chunks, m.Chunks) || back.Shard != m.Shard || back.NativeBytes != m.NativeBytes {
		t.Errorf("round trip: got %+v, want %+v", back, m)
	}

	old := `{"format":"lines","shard":"2026-01","chunks":[{"t":0,"n":10,"ts":0,"o":5,"l":100,"s":40,"c":7},{"t":10,"n":10,"ts":200000000,"o":105,"l":90,"s":35,"c":8,"p":true}]}`
	var om Manifest
	if err := json.Unmarshal([]byte(old), &om); err != nil {
		t.Fatal(err)
	}
	want := []ChunkEntry{
		{StartTick: 0, Ticks: 10, Offset: 5, Length: 100, Stored: 40, CRC: 7},
		{StartTick: 10, Ticks: 10, Time: 200 * time.Millisecond, Offset: 105, Length: 90, Stored: 35, CRC: 8, Precompressed: true},
	}
	if !reflect.DeepEqual(om.Chunks, want) || om.Shard != "2026-01" {
		t.Errorf("old manifest: got %+v", om)
	}
}

func TestChunkTableErrors(t *testing.T) {
	good := appendChunkTable(nil, sampleChunks())
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{9}, good[1:]...),
		"cut":           good[:len(good)-1],
		"trailing":      append(append([]byte{}, good...), 0),
		"huge count":    {chunkTableVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge length":   appendChunkTable(nil, []ChunkEntry{{Length: 3 * MaxChunkBytes}}),
		"count too big": {chunkTableVersion, 2, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4},
	} {
		if _, err := decodeChunkTable(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzChunkTable decodes arbitrary tables: errors, never panics, and what
// decodes encodes back to the same bytes.
func FuzzChunkTable(f *testing.F) {
	f.Add(appendChunkTable(nil, sampleChunks()))
	f.Add(appendChunkTable(nil, nil))
	f.Add([]byte{chunkTableVersion, 1, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		chunks, err := decodeChunkTable(b)
		if err != nil {
			return
		}
		if again := appendChunkTable(nil, chunks); string(again) != string(b) {
			// Varints have one shortest form; a longer one decodes too.
			if back, err := decodeChunkTable(again); err != nil || !reflect.DeepEqual(back, chunks) {
				t.Fatalf("re-encoded table decodes to %+v, %v; want %+v", back, err, chunks)
			}
		}
	})
}

// TestDecodeManifest checks the fast path that takes the chunk table off
// the end agrees with json.Unmarshal, and falls back on other shapes.
func TestDecodeManifest(t *testing.T) {
	m := &Manifest{Format: "teehistorian", Shard: "2026-01", Chunks: sampleChunks()}
	m.Meta.Attrs = map[string]string{"a": "b", "ct": "not the table"}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := splitTable(b); !ok {
		t.Errorf("the table of %s is not found from the end", b)
	}
	old := []byte(`{"format":"lines","shard":"2026-01","chunks":[{"t":0,"n":10,"o":5,"l":100,"s":40,"c":7}]}`)
	for _, v := range [][]byte{b, old} {
		var want Manifest
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeManifest(v)
		if err != nil {
			t.Fatalf("decodeManifest(%s): %v", v, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("decodeManifest: got %+v, want %+v", got, &want)
		}
	}
	for _, bad := range []string{`{"format":"x","ct":"!!!"}`, `{"format":"x","ct":"AQ=="}`, `{"format":1,"ct":"AQA="}`,
		`{"format":"x","ct":"AQ==","ctl":4}`, `{"format":1,"ct":"AQA=","ctl":4}`, `{"format":"x","ct":"!!!!","ctl":4}`} {
		if _, err := decodeManifest([]byte(bad)); err == nil {
			t.Errorf("decodeManifest(%s): no error", bad)
		}
	}
}

// FuzzDecodeManifest checks that the fast path agrees with json.Unmarshal:
// whatever it accepts, json.Unmarshal reads the same way.
func FuzzDecodeManifest(f *testing.F) {
	m := &Manifest{Format: "teehistorian", Chunks: sampleChunks()}
	b, _ := json.Marshal(m)
	f.Add(b)
	f.Add([]byte(`{"format":"x","ct":"AQA=","ctl":4}`))
	f.Add([]byte(`{"chunks":[{"t":1}],"ct":"AQA=","ctl":4}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := decodeManifest(v)
		if err != nil {
			return
		}
		var want Manifest
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("decodeManifest accepted what json.Unmarshal refuses (%v): %q", err, v)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("decodeManifest = %+v, json.Unmarshal = %+v", got, &want)
		}
	})
}
