package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the demo recordings in demodata/ from the generators")

// The demo recordings are made by our own writers; this test proves the
// embedded bytes are exactly what the generators make today, and with
// -update rewrites them.
func TestDemoDataIsGenerated(t *testing.T) {
	for _, d := range demoRecordings() {
		want, err := d.generate()
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		path := filepath.Join("demodata", d.name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := demoFS.ReadFile("demodata/" + d.name)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./cmd/archivectl -run TestDemoDataIsGenerated -update)", d.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: embedded bytes differ from the generator's output (%d vs %d bytes); run with -update if the writer changed on purpose", d.name, len(got), len(want))
		}
	}
}
