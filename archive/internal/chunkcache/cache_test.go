package chunkcache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestCache: the least recently used blob goes past the limit, a reopened
// cache indexes what it finds, Drop removes a recording's blobs (also
// files it never indexed), and Stats counts what was served.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	id, other := uuid.New(), uuid.New()
	c := Open(dir, 20, 0o600, 0o700)
	blob := bytes.Repeat([]byte{7}, 8)
	c.Put(Name(id, 0), blob)
	c.Put(Name(id, 8), blob)
	if _, ok := c.Get(Name(id, 0), 8, nil); !ok { // id-0 is now the most recent
		t.Fatal("a cached blob was not found")
	}
	c.Put(Name(other, 0), blob) // 24 bytes: id-8 goes
	if _, ok := c.Get(Name(id, 8), 8, nil); ok {
		t.Error("the least recently used blob was kept past the limit")
	}
	if got, ok := c.Get(Name(other, 0), 8, make([]byte, 0, 8)); !ok || !bytes.Equal(got, blob) {
		t.Errorf("got %v %v", got, ok)
	}
	if st := c.Stats(); st != (Stats{Bytes: 16, Limit: 20, Blobs: 2, Hits: 2, Misses: 1}) {
		t.Errorf("stats %+v", st)
	}
	// On disk: id-0 and other-0; a third blob written by another process
	// is the newest, and the reopened cache keeps the two newest.
	if err := os.WriteFile(filepath.Join(dir, Name(id, 99)), blob, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, name := range []string{Name(id, 0), Name(other, 0), Name(id, 99)} {
		mod := now.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, name), mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	c = Open(dir, 20, 0o600, 0o700)
	if st := c.Stats(); st.Blobs != 2 || st.Bytes != 16 {
		t.Errorf("reopened: %+v, want two blobs", st)
	}
	if _, ok := c.Get(Name(id, 0), 8, nil); ok {
		t.Error("reopened: the oldest blob was kept past the limit")
	}
	if err := os.WriteFile(filepath.Join(dir, Name(id, 50)), blob, 0o600); err != nil { // not indexed
		t.Fatal(err)
	}
	c.Drop(id)
	for _, name := range []string{Name(id, 99), Name(id, 50)} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s of the dropped recording: %v", name, err)
		}
	}
	if _, ok := c.Get(Name(other, 0), 8, nil); !ok {
		t.Error("Drop removed another recording's blob")
	}
	c.Clear()
	if st := c.Stats(); st.Blobs != 0 || st.Bytes != 0 {
		t.Errorf("after Clear: %+v", st)
	}
}
