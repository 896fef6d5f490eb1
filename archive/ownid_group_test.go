package archive

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// Two files naming the same recording (a whole game and a clip of it)
// committed in one group are decided as if committed one after the other:
// the first keeps the file's own id, the second gets the derived id with
// the same note as across commits, and both are kept.
func TestOwnIDConflictInOneGroup(t *testing.T) {
	a := openTest(t, "", Options{})
	own := uuid.MustParse("11111111-2222-3333-4444-555555555555")
	whole, clip := formatstest.LinesFile("s", 20), formatstest.LinesFile("s", 10)
	setID := func(m *formats.Metadata) { m.ID = own }
	pend := []*Pending{
		finished(t, a, formatstest.Lines{}, whole, setID),
		finished(t, a, formatstest.Lines{}, clip, setID),
	}
	res, err := a.Commit(context.Background(), pend)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ID != own || res[0].Outcome != Ingested {
		t.Fatalf("first: id %s outcome %v, want the file's own %s, ingested", res[0].ID, res[0].Outcome, own)
	}
	derived := IDFromSHA256(sha256Of(clip))
	if res[1].ID != derived || res[1].Outcome != Ingested || res[1].Note == "" {
		t.Fatalf("second: id %s outcome %v note %q, want the derived %s, ingested, with a note", res[1].ID, res[1].Outcome, res[1].Note, derived)
	}
	if !bytes.Equal(export(t, a, own), whole) || !bytes.Equal(export(t, a, derived), clip) {
		t.Error("exports differ from the ingested files")
	}
	rep, err := a.Check(context.Background(), CheckOptions{ReadData: true})
	if err != nil || !rep.OK() || rep.Recordings != 2 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}
