package teehistorian

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
)

func TestDumpCorpus(t *testing.T) {
	path := os.Getenv("TH_DUMP")
	if path == "" {
		t.Skip()
	}
	f, _ := os.Open(path)
	rd, err := NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Type == ItemPlayerDiff || it.Type == ItemInputDiff {
			continue
		}
		fmt.Printf("%d %s %q\n", it.Offset, it.String(), it.Data)
	}
	fmt.Println("finished", rd.Finished(), rd.State().Tick)
}
