package archive

import (
	"testing"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// TestTrimChangesInBatches: a log longer than one trim transaction is
// trimmed up to the sequence asked, no further, across transactions.
func TestTrimChangesInBatches(t *testing.T) {
	a := openTest(t, t.TempDir(), Options{NoSync: true})
	const n = 2*trimBatch + 500
	fillChangeLog(t, a, n)
	if err := a.TrimChanges(2*trimBatch + 100); err != nil {
		t.Fatal(err)
	}
	left, err := a.ChangesSince(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 400 || left[0].Seq != 2*trimBatch+101 {
		t.Fatalf("%d entries left, first %d; want 400 from %d", len(left), left[0].Seq, 2*trimBatch+101)
	}
	if err := a.TrimChanges(n); err != nil {
		t.Fatal(err)
	}
	if left, _ := a.ChangesSince(0, 0); len(left) != 0 {
		t.Fatalf("%d entries left", len(left))
	}
}

// TestLargeTrimCompactsCatalog: trimming the log of a bulk import (at
// least trimCompactMin entries at once) leaves a compacted catalog
// rather than a file of free pages that every open reads the list of;
// the entries after the trimmed ones are still there.
func TestLargeTrimCompactsCatalog(t *testing.T) {
	a := openTest(t, t.TempDir(), Options{NoSync: true})
	const n = trimCompactMin + 50
	fillChangeLog(t, a, n)
	before, err := a.catalogSpace()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.TrimChanges(trimCompactMin); err != nil {
		t.Fatal(err)
	}
	after, err := a.catalogSpace()
	if err != nil {
		t.Fatal(err)
	}
	if after.FileBytes*2 > before.FileBytes {
		t.Errorf("catalog of %d bytes before the trim, %d after: not compacted", before.FileBytes, after.FileBytes)
	}
	if left, err := a.ChangesSince(0, 0); err != nil || len(left) != 50 || left[0].Seq != trimCompactMin+1 {
		t.Fatalf("%d entries left, %v", len(left), err)
	}
}

// fillChangeLog appends n puts of new ids to a's change log in one
// transaction.
func fillChangeLog(t *testing.T, a *Archive, n int) {
	t.Helper()
	err := a.catalog.Update(func(tx *bolt.Tx) error {
		for range n {
			if err := appendChange(tx, ChangePut, uuid.New()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
