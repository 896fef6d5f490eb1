// Tests that decoding matches the reference reader's decoded dumps.

package butter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// jsonEqual compares two JSON documents numerically: numbers as float32
// (±0 equal), a missing key equal to null. It returns the first
// difference's path, or "".
func jsonEqual(path string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			if b == nil && len(x) == 0 {
				return ""
			}
			return fmt.Sprintf("%s: object vs %T", path, b)
		}
		for k, v := range x {
			if d := jsonEqual(path+"."+k, v, y[k]); d != "" {
				return d
			}
		}
		for k, v := range y {
			if _, ok := x[k]; !ok && !isEmpty(v) {
				return fmt.Sprintf("%s.%s: missing, want %v", path, k, v)
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if b == nil && len(x) == 0 {
			return ""
		}
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		for i := range x {
			if d := jsonEqual(path+"["+strconv.Itoa(i)+"]", x[i], y[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		fa, _ := strconv.ParseFloat(string(x), 32)
		fb, _ := strconv.ParseFloat(string(y), 32)
		if float32(fa) != float32(fb) {
			return fmt.Sprintf("%s: %v vs %v", path, x, y)
		}
		return ""
	case nil:
		if !isEmpty(b) {
			return fmt.Sprintf("%s: null vs %v", path, b)
		}
		return ""
	default:
		if a != b {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		return ""
	}
}

func parseJSON(t testing.TB, b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("json: %v", err)
	}
	return v
}

// compareDecoded compares our frames with a reference dump, line by line:
// every frame when BUTTER_FULL is set, otherwise the first three frames of
// every chunk of k, every 10th frame and the last one (to keep go test
// fast).
func compareDecoded(t *testing.T, frames []*Frame, dump []byte, k int) {
	lines := bytes.Split(bytes.TrimRight(dump, "\n"), []byte("\n"))
	if len(lines) != len(frames) {
		t.Fatalf("%d frames, reference dump has %d", len(frames), len(lines))
	}
	full := os.Getenv("BUTTER_FULL") != ""
	for i, raw := range lines {
		if !full && i%k > 2 && i%10 != 0 && i != len(lines)-1 {
			continue
		}
		l, err := SplitLine(bytes.TrimRight(raw, "\r"))
		if err != nil {
			t.Fatalf("dump line %d: %v", i, err)
		}
		f := frames[i]
		if !f.RecordedTime.Equal(l.Time) {
			t.Fatalf("frame %d: time %v, want %v", i, f.RecordedTime, l.Time)
		}
		got, _ := json.Marshal(f)
		if d := jsonEqual("", parseJSON(t, got), parseJSON(t, l.Session)); d != "" {
			t.Fatalf("frame %d: %s", i, d)
		}
		if (f.Bones != nil) != (l.Bones != nil) {
			t.Fatalf("frame %d: bones present %v, want %v", i, f.Bones != nil, l.Bones != nil)
		}
		if f.Bones != nil {
			got, _ := json.Marshal(f.Bones)
			if d := jsonEqual("bones", parseJSON(t, got), parseJSON(t, l.Bones)); d != "" {
				t.Fatalf("frame %d: %s", i, d)
			}
		}
	}
}

func TestDecodeMatchesReferenceReader(t *testing.T) {
	dir := filepath.Join(corpusDir(t), "reference")
	for _, rf := range refFiles(t) {
		// the dumps were made from the "none" files; gzip and zstd files
		// have identical payloads and must decode identically.
		dump := filepath.Join(dir, "decoded", rf.Set+".none.k"+strconv.Itoa(rf.K)+".decoded.echoreplay.zst")
		if !fileExists(dump) || rf.Compression > CompressGzip {
			continue // zstd payloads equal the none ones (TestWriterMatchesReference)
		}
		t.Run(filepath.Base(rf.Path), func(t *testing.T) {
			dec, err := Decode(context.Background(), readFile(t, rf.Path), DecodeOptions{Reference: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(dec.Warnings) > 0 {
				t.Errorf("warnings: %v", dec.Warnings)
			}
			compareDecoded(t, dec.Frames, readZst(t, dump), rf.K)
		})
	}
}

func fileExists(p string) bool {
	_, err := osStat(p)
	return err == nil
}

var _ = strings.TrimSpace

// isEmpty reports null, {} and [] (which our omitempty output leaves out).
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
