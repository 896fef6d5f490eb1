// Tests that our writer reproduces the reference writer's bytes.

package butter

import (
	"bytes"
	"strconv"
	"testing"
)

func TestWriterMatchesReference(t *testing.T) {
	for _, rf := range refFiles(t) {
		t.Run(rf.Set+"."+rf.Compression.String()+".k"+itoa(rf.K), func(t *testing.T) {
			frames := inputFrames(t, rf.Set)
			w, err := NewWriter(WriterOptions{KeyframeInterval: rf.K, Compression: CompressNone})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames {
				if err := w.Add(f); err != nil {
					t.Fatal(err)
				}
			}
			got, err := w.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			want := readFile(t, rf.Path)
			if rf.Compression == CompressNone {
				if !bytes.Equal(got, want) {
					t.Fatalf("differs at byte %d of %d (got %d bytes)", firstDiff(got, want), len(want), len(got))
				}
				return
			}
			// compressed: headers equal but for the compression byte, and
			// every chunk decompresses to our uncompressed chunk.
			gf, err := ParseFileHeader(got)
			if err != nil {
				t.Fatal(err)
			}
			wf, err := ParseFileHeader(want)
			if err != nil {
				t.Fatal(err)
			}
			gh, wh := bytes.Clone(got[:gf.HeaderLen]), bytes.Clone(want[:wf.HeaderLen])
			gh[3] = wh[3]
			if !bytes.Equal(gh, wh) {
				t.Fatalf("headers differ at byte %d", firstDiff(gh, wh))
			}
			if len(gf.ChunkSizes) != len(wf.ChunkSizes) {
				t.Fatalf("%d chunks, want %d", len(gf.ChunkSizes), len(wf.ChunkSizes))
			}
			goff, woff := gf.DataStart(), wf.DataStart()
			for i := range wf.ChunkSizes {
				gc := got[goff : goff+int64(gf.ChunkSizes[i])]
				wc := want[woff : woff+int64(wf.ChunkSizes[i])]
				goff += int64(gf.ChunkSizes[i])
				woff += int64(wf.ChunkSizes[i])
				wp, err := decompressChunk(wc, rf.Compression, maxChunkPayload)
				if err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
				if !bytes.Equal(gc, wp) {
					t.Fatalf("chunk %d: payload differs at byte %d of %d", i, firstDiff(gc, wp), len(wp))
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }
