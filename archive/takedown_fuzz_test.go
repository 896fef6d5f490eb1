package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	bolt "go.etcd.io/bbolt"
)

// FuzzTakedownRecord stores damaged takedown records under the sha256 of a
// file being ingested: every reader of the bucket (TakenDown, Takedowns,
// Commit) must answer with a takedown or an error, never panic, and a
// record that decodes must refuse the bytes.
func FuzzTakedownRecord(f *testing.F) {
	a := openTest(f, "", Options{})
	file := formatstest.LinesFile("fuzz", 8)
	sum := sha256.Sum256(file)
	good, _ := json.Marshal(Takedown{SHA256: "00", By: "mod", Reason: "why"})
	f.Add(good)
	f.Add([]byte(`{"at":"not a time"}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, record []byte) {
		err := a.catalog.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketTakedowns).Put(sum[:], record)
		})
		if err != nil {
			t.Skip(err) // bbolt refuses some values (none so far)
		}
		td, err := a.TakenDown(sum[:])
		a.Takedowns()
		p := a.NewPending("lines", "fuzz.lines")
		meta, serr := formatstest.Lines{}.Split(context.Background(), bytes.NewReader(file), p)
		if serr != nil {
			t.Fatal(serr)
		}
		if _, err := p.Finish(meta); err != nil {
			t.Fatal(err)
		}
		res, cerr := a.Commit(context.Background(), []*Pending{p})
		switch {
		case err == nil && td != nil && (cerr != nil || res[0].Outcome != TakenDown):
			t.Fatalf("a readable takedown did not refuse the bytes: %v %+v", cerr, res)
		case err != nil && cerr == nil:
			t.Fatalf("an unreadable takedown record let the bytes in: %+v", res)
		case cerr == nil && res[0].Outcome == Ingested:
			// Only an empty record is no takedown: JSON null.
			if _, err := a.Delete(context.Background(), res[0].ID); err != nil {
				t.Fatal(err)
			}
		}
	})
}
