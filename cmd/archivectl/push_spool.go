// archivectl push: the local spool of bytes the archive has not taken yet.

package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replayarchive/replay/internal/durable"
)

// spool is the agent's local copy of the bytes the archive has not
// acknowledged, kept while the archive is away or a file's send failed:
// a game server may delete or rotate a file before the archive has it.
// Each source has a data file (DIR/HEX.data, HEX the sha256 of the source
// name) of the bytes from Base on, and a record (DIR/HEX.json) saying
// which, written after the data is fsync'd (temp file and rename). Its
// bytes stay within max; none is dropped to make room. Its methods are
// safe for concurrent use (the status ticker reads its counts).
type spool struct {
	dir string
	max int64

	mu      sync.Mutex
	entries map[string]*spoolEntry // by source
	total   int64
}

// spoolEntry is one source's record.
type spoolEntry struct {
	Source string `json:"source"`
	Path   string `json:"path"`
	Base   int64  `json:"base"`
	Length int64  `json:"length"`
	// Since is when its first byte was spooled.
	Since time.Time `json:"since"`
	// Set is the source of the recording directory the source is a
	// piece of ("": none); Whole says the entry is the piece's whole
	// bytes (a header or a marker, replaced whole: replace).
	Set   string `json:"set,omitempty"`
	Whole bool   `json:"whole,omitempty"`
}

// end is the offset past the spooled bytes.
func (e *spoolEntry) end() int64 { return e.Base + e.Length }

// errSpoolFull says the spool took fewer bytes than asked: it is full.
var errSpoolFull = errors.New("the spool is full")

// openSpool opens (making it, 0700) the spool in dir holding at most max
// bytes, and reads its records; a record it cannot read is an error that
// names it (the spool is left as it is).
func openSpool(dir string, max int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the spool: %w", err)
	}
	s := &spool{dir: dir, max: max, entries: map[string]*spoolEntry{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the spool: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(dir, name)) // a record not renamed: its data is not claimed
			continue
		}
		id, ok := strings.CutSuffix(name, ".json")
		if !ok {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("the spool's record %s: %w", path, err)
		}
		var e spoolEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("the spool's record %s is corrupt (%v): move it away (its bytes are in %s.data) and start again", path, err, id)
		}
		if e.Source == "" || e.Base < 0 || e.Length < 0 || spoolName(e.Source) != id {
			return nil, fmt.Errorf("the spool's record %s is corrupt (source %q, base %d, length %d): move it away and start again", path, e.Source, e.Base, e.Length)
		}
		st, err := os.Stat(s.data(e.Source))
		if err != nil || st.Size() < e.Length {
			return nil, fmt.Errorf("the spool's record %s says %d bytes of %s, its data file has fewer (%v): move both away and start again", path, e.Length, e.Source, err)
		}
		s.entries[e.Source] = &e
		s.total += e.Length
	}
	return s, nil
}

// spoolName is the base name of source's files in the spool.
func spoolName(source string) string {
	h := sha256.Sum256([]byte(source))
	return hex.EncodeToString(h[:])
}

func (s *spool) data(source string) string   { return filepath.Join(s.dir, spoolName(source)+".data") }
func (s *spool) record(source string) string { return filepath.Join(s.dir, spoolName(source)+".json") }

// get returns a copy of source's record (ok false: none).
func (s *spool) get(source string) (e spoolEntry, ok bool) {
	if s == nil {
		return e, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.entries[source]; p != nil {
		return *p, true
	}
	return e, false
}

// list returns copies of every record, oldest first.
func (s *spool) list() []spoolEntry {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]spoolEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b spoolEntry) int { return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Source, b.Source)) })
	return out
}

// counts returns the spool's bytes and sources.
func (s *spool) counts() (bytes int64, files int) {
	if s == nil {
		return 0, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, len(s.entries)
}

// add copies the bytes [from, to) of r, the file at path, to source's
// spool, from the offset the spool holds up to (from is where it starts
// when it holds none, or when from is past what it holds: the bytes
// before from are the archive's). It reads through buf. set is the
// source of the recording directory the file is a piece of, or "". It
// returns how many bytes it added; errSpoolFull when it took fewer than
// there were for want of room (it keeps what it took), or a reading or
// writing error.
func (s *spool) add(source, set, path string, r io.ReaderAt, from, to int64, buf []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[source]
	if e != nil && from > e.end() {
		// The archive has everything the spool holds, and more.
		s.dropLocked(source)
		e = nil
	}
	fresh := e == nil
	if fresh {
		e = &spoolEntry{Source: source, Set: set, Path: path, Base: from, Since: time.Now()}
	}
	start := e.end()
	if start >= to {
		return 0, nil
	}
	room := s.max - s.total
	want := to - start
	n := min(want, max(0, room))
	if n == 0 {
		return 0, errSpoolFull
	}
	df, err := os.OpenFile(s.data(source), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("the spool: %w", err)
	}
	defer df.Close()
	if fresh {
		if err := df.Truncate(0); err != nil {
			return 0, fmt.Errorf("the spool: %w", err)
		}
	}
	var done int64
	cut := false
	for done < n {
		k := min(int64(len(buf)), n-done)
		b, err := readChunk(r, buf, start+done, k)
		if err != nil {
			// Cut short meanwhile: keep what was read.
			cut = true
			break
		}
		if _, err := df.WriteAt(b, e.Length+done); err != nil {
			return 0, fmt.Errorf("the spool: %w", err)
		}
		done += k
	}
	if done == 0 {
		if fresh {
			os.Remove(s.data(source))
		}
		return 0, nil
	}
	if err := df.Sync(); err != nil {
		return 0, fmt.Errorf("the spool: %w", err)
	}
	ne := *e
	ne.Length += done
	ne.Path = path
	if err := s.writeRecord(&ne); err != nil {
		return 0, err
	}
	s.entries[source] = &ne
	s.total += done
	if n < want && !cut {
		return done, errSpoolFull
	}
	return done, nil
}

// replace makes b, the whole of the file at path (a piece of the
// recording directory set), source's spool in place of what it held;
// errSpoolFull (holding what it held) when b does not fit.
func (s *spool) replace(source, set, path string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := int64(0)
	if e := s.entries[source]; e != nil {
		if e.Whole && e.Length == int64(len(b)) {
			if old, err := os.ReadFile(s.data(source)); err == nil && string(old[:min(len(old), len(b))]) == string(b) {
				return nil // holds these bytes
			}
		}
		held = e.Length
	}
	if int64(len(b)) > s.max-s.total+held {
		return errSpoolFull
	}
	// The record goes first: data without a record is not claimed, and a
	// record whose data file is shorter is refused at open.
	s.dropLocked(source)
	if err := durable.WriteFile(s.data(source), b, 0o600, true); err != nil {
		return fmt.Errorf("the spool: %w", err)
	}
	e := &spoolEntry{Source: source, Set: set, Path: path, Length: int64(len(b)), Since: time.Now(), Whole: true}
	if err := s.writeRecord(e); err != nil {
		return err
	}
	s.entries[source] = e
	s.total += e.Length
	return nil
}

// writeRecord writes e's record, durably and whole.
func (s *spool) writeRecord(e *spoolEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := durable.WriteFile(s.record(e.Source), b, 0o600, true); err != nil {
		return fmt.Errorf("the spool: %w", err)
	}
	return nil
}

// readAt reads n bytes of source at off (a file offset) into buf; ok
// false when the spool does not hold them all.
func (s *spool) readAt(source string, buf []byte, off, n int64) (b []byte, ok bool, err error) {
	if s == nil {
		return nil, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[source]
	if e == nil || off < e.Base || off+n > e.end() {
		return nil, false, nil
	}
	f, err := os.Open(s.data(source))
	if err != nil {
		return nil, false, fmt.Errorf("the spool: %w", err)
	}
	defer f.Close()
	b, err = readChunk(f, buf, off-e.Base, n)
	if err != nil {
		return nil, false, fmt.Errorf("the spool's copy of %s: %w", source, err)
	}
	return b, true, nil
}

// acked notes that the archive holds have bytes of source: its spool is
// deleted once that reaches its end (or, done, when the source ended).
func (s *spool) acked(source string, have int64, done bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[source]; e != nil && (done || have >= e.end()) {
		s.dropLocked(source)
	}
}

// dropSet deletes the spool of every piece of the recording directory
// set (it ended: sealed, ingested or refused).
func (s *spool) dropSet(set string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for src, e := range s.entries {
		if e.Set == set {
			s.dropLocked(src)
		}
	}
}

// dropLocked deletes source's spool; s.mu is held.
func (s *spool) dropLocked(source string) {
	e := s.entries[source]
	if e == nil {
		return
	}
	// The record first: data without a record is not claimed.
	os.Remove(s.record(source))
	os.Remove(s.data(source))
	s.total -= e.Length
	delete(s.entries, source)
}
