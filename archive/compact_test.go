package archive

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// TestTidyCatalog: a catalog left sparse (here by deletes) is copied by
// TidyCatalog; the copy is smaller, what is left reads back, and a second
// call finds nothing to do.
func TestTidyCatalog(t *testing.T) {
	ctx := context.Background()
	a := openTest(t, "", Options{})
	var ids []uuid.UUID
	for i := range 150 {
		ids = append(ids, ingest(t, a, sharedLines(fmt.Sprint("s", i), 12), nil).ID)
	}
	if done, err := a.TidyCatalog(); done || err != nil {
		t.Fatalf("TidyCatalog after ingest alone: %v, %v", done, err)
	}
	for _, id := range ids[10:] {
		if _, err := a.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := a.catalogSpace()
	if err != nil {
		t.Fatal(err)
	}
	done, err := a.TidyCatalog()
	if err != nil || !done {
		t.Fatalf("TidyCatalog on a catalog of %d live bytes in %d: %v, %v", before.LiveBytes, before.FileBytes, done, err)
	}
	after, err := a.catalogSpace()
	if err != nil || after.FileBytes >= before.FileBytes {
		t.Fatalf("catalog %d bytes after, %d before: %v", after.FileBytes, before.FileBytes, err)
	}
	if done, err := a.TidyCatalog(); done || err != nil {
		t.Errorf("second TidyCatalog: %v, %v", done, err)
	}
	for i, id := range ids[:10] {
		if !bytes.Equal(export(t, a, id), sharedLines(fmt.Sprint("s", i), 12)) {
			t.Fatalf("recording %d differs after the compaction", i)
		}
	}
}
