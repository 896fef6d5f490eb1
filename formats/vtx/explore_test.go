package vtx

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"fmt"

	"github.com/replayarchive/replay/formats/formatstest"
)

func TestExplore(t *testing.T) {
	dir := formatstest.CorpusDir(t, "vtx")
	for _, n := range []string{"post_processed.vtx", "arena_from_proto_ds.vtx", "arena_from_fbs_ds.vtx"} {
		fh, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFile(context.Background(), fh, 0)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		h := *f.Header
		h.Schema = h.Schema[:40]
		fmt.Printf("%s: %+v\n", n, h)
		ft := *f.Footer
		fmt.Printf("footer frames %d dur %v gt %v cu %v chunks %+v ev %v\n", ft.TotalFrames, ft.DurationSeconds, ft.GameTime[:3], ft.CreatedUTC[:2], ft.Chunks[:2], ft.Events)
		fmt.Printf("chunks %d frames %d warnings %v idx %v %v\n", len(f.Chunks), f.Frames(), f.Warnings, f.Chunks[0].Index, f.Chunks[0].IsCompressed)
		fr := f.Chunks[0].Frames[0]
		fmt.Printf("buckets %d ids %v ranges %v\n", len(fr.Buckets), fr.Buckets[0].UniqueIDs, fr.Buckets[0].TypeRanges)
		fmt.Printf("ent0 %+v\nentLast %+v\n", fr.Buckets[0].Entities[0], fr.Buckets[0].Entities[len(fr.Buckets[0].Entities)-1])
	}
}
