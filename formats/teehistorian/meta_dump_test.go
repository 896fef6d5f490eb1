package teehistorian

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
)

func TestDumpMeta(t *testing.T) {
	path := os.Getenv("TH_META")
	if path == "" {
		t.Skip()
	}
	b, _ := os.ReadFile(path)
	rec := formatstest.Split(t, New(), b)
	j, _ := json.MarshalIndent(rec.Metadata, "", " ")
	fmt.Println(string(j))
	fmt.Println(len(rec.ChunkIndex), "chunks")
}
