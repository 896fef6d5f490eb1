// Bomb tests: records whose length fields lie, strings that never end, and a
// tick that never ends, each streamed from a reader that claims a 2 GiB file
// without materialising it. Every one must end with a clear *formats.Error
// after reading a bounded number of bytes, in bounded memory and time.

package teehistorian

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/memtest"
)

// heapBudget is the per-file memory budget of the hostile-input issue.
const heapBudget = 256 << 20

// bombReader yields head, then body repeated, up to size bytes in all: a 2
// GiB file that costs nothing to produce.
type bombReader struct {
	head, body []byte
	size, off  int64
}

func (b *bombReader) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.size-b.off)]
	n := 0
	for n < len(p) {
		var src []byte
		if b.off < int64(len(b.head)) {
			src = b.head[b.off:]
		} else {
			k := int((b.off - int64(len(b.head))) % int64(len(b.body)))
			src = b.body[k:]
		}
		c := copy(p[n:], src)
		n += c
		b.off += int64(c)
	}
	return n, nil
}

func bombHeader() []byte {
	hj, _ := testHeader().MarshalJSON()
	return append(append(Magic[:], hj...), 0)
}

func TestBombs(t *testing.T) {
	head := bombHeader()
	hugeMsg := AppendVarint(AppendVarint(AppendVarint(nil, -7), 0), math.MaxInt32)
	antibot := ExAntibot.UUID()
	hugeEx := append(AppendVarint(nil, -11), antibot[:]...)
	hugeEx = AppendVarint(hugeEx, math.MaxInt32)
	endlessCmd := AppendVarint(AppendVarint(AppendVarint(nil, -10), 0), 0)
	endlessDrop := AppendVarint(AppendVarint(nil, -9), 3)
	bigMsg := AppendVarint(AppendVarint(AppendVarint(nil, -7), 0), 64<<10)
	bigMsg = append(bigMsg, make([]byte, 64<<10)...)
	const twoGiB = 2 << 30
	for _, tc := range []struct {
		name       string
		head, body []byte
		what       string
		maxRead    int64 // bytes the reader may take from the file
		maxAlloc   uint64
	}{
		// The case: a MESSAGE claiming 2^31-1 bytes in a 2 GiB file.
		{"message claims 2^31-1 bytes", append(bytes.Clone(head), hugeMsg...), []byte{0}, "MESSAGE size at most", 64 << 10, 1 << 20},
		{"ex claims 2^31-1 bytes", append(bytes.Clone(head), hugeEx...), []byte{0}, "EX size at most", 64 << 10, 1 << 20},
		{"command string without NUL", append(bytes.Clone(head), endlessCmd...), []byte("a"), "record of at most", 4 * MaxRecordBytes, 8 * MaxRecordBytes},
		{"drop reason without NUL", append(bytes.Clone(head), endlessDrop...), []byte("Timeout"), "record of at most", 4 * MaxRecordBytes, 8 * MaxRecordBytes},
		// The header's buffer grows to 4×maxHeader in all; the 64 KiB is
		// the samplers' own allocations, which memtest.Allocated counts
		// too (a run of 89 ms passed 4×maxHeader by 1,328 bytes).
		{"header without NUL", Magic[:], []byte(`{"version":"2"`), "within 4194304 bytes", 2*maxHeader + 64<<10, 4*maxHeader + 64<<10},
		// Records that never reach a tick boundary: the chunk cannot be cut.
		{"one endless tick", head, bigMsg, "tick boundary within", maxBuffer + 64<<10, heapBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &bombReader{head: tc.head, body: tc.body, size: twoGiB}
			var err error
			var peak uint64
			var elapsed time.Duration
			alloc := memtest.Allocated(func() {
				peak = memtest.Peak(func() {
					start := time.Now()
					_, err = New().Split(t.Context(), r, formatstest.Discard{})
					elapsed = time.Since(start)
				})
			})
			var fe *formats.Error
			if !errors.As(err, &fe) || !strings.Contains(fe.What, tc.what) {
				t.Fatalf("got %v, want a *formats.Error about %q", err, tc.what)
			}
			t.Logf("%v after reading %d bytes in %v, %d bytes allocated in all, peak heap %d bytes", err, r.off, elapsed, alloc, peak)
			if peak > heapBudget {
				t.Errorf("peak heap %d bytes, budget %d", peak, heapBudget)
			}
			if r.off > tc.maxRead {
				t.Errorf("read %d bytes of the 2 GiB stream, want at most %d", r.off, tc.maxRead)
			}
			// Everything allocated bounds the peak heap from above.
			if alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes, budget %d", alloc, tc.maxAlloc)
			}
			// Bytes read is the exact measure of failing fast; the time
			// only guards against a regression to the 31 s, with
			// room for the shared machine's load.
			if elapsed > 30*time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}

// TestMetadataBounds: long command arguments, drop reasons and names are cut
// in the metadata, on a UTF-8 boundary, so its size does not follow the
// file's.
func TestMetadataBounds(t *testing.T) {
	hj, _ := testHeader().MarshalJSON()
	var buf bytes.Buffer
	rec, err := NewRecorder(&buf, hj)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 50_000)
	rec.PlayerJoin(0, false)
	rec.PlayerName(0, "n"+long)
	for i := range 10 {
		rec.BeginTick(int64(i + 1))
		rec.ConsoleCommand(0, 4, "say", long)
		rec.Drop(1, long)
	}
	if err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
	m := formatstest.Split(t, New(), buf.Bytes()).Metadata
	if len(m.Players) != 1 || len(m.Players[0].Name) > maxName || !strings.HasSuffix(m.Players[0].Name, "é…") {
		t.Errorf("players %q", m.Players)
	}
	if len(m.Events) != 21 { // a join, ten commands, ten drops
		t.Fatalf("%d events", len(m.Events))
	}
	for _, e := range m.Events {
		if len(e.Text) > maxEventText || !utf8.ValidString(e.Text) || len(e.Player) > maxName {
			t.Fatalf("event of %d bytes: %.80q…", len(e.Text), e.Text)
		}
	}
}

// TestRecordLimit: a record of exactly MaxRecordBytes reads, one byte more
// is refused at its size field, and a console command whose redaction would
// pass the limit makes Redact fail instead of writing an unreadable file.
func TestRecordLimit(t *testing.T) {
	head := bombHeader()
	msg := func(total int) []byte {
		for size := total - 6; ; size++ {
			b := AppendVarint(AppendVarint(AppendVarint(nil, -7), 0), int32(size))
			if len(b)+size == total {
				return append(b, make([]byte, size)...)
			}
		}
	}
	ok := append(append(bytes.Clone(head), msg(MaxRecordBytes)...), AppendVarint(nil, -1)...)
	if _, err := formatstest.TrySplit(New(), ok); err != nil {
		t.Fatalf("record of MaxRecordBytes: %v", err)
	}
	long := append(append(bytes.Clone(head), msg(MaxRecordBytes+1)...), AppendVarint(nil, -1)...)
	if _, err := formatstest.TrySplit(New(), long); err == nil || !strings.Contains(err.Error(), "MESSAGE size at most") {
		t.Fatalf("record of MaxRecordBytes+1: %v", err)
	}

	args := []string{strings.Repeat("p", MaxRecordBytes-3000), "level"}
	for range 1000 {
		args = append(args, "s")
	}
	var buf bytes.Buffer
	hj, _ := testHeader().MarshalJSON()
	rec, _ := NewRecorder(&buf, hj)
	rec.BeginTick(2)
	rec.ConsoleCommand(0, 4, "auth_add", args...)
	if err := rec.Finish(); err != nil {
		t.Fatal(err)
	}
	r := formatstest.Split(t, New(), buf.Bytes())
	for _, from := range []int64{0, 1} {
		err := New().Redact(t.Context(), r.Source(), formats.Ticks(from, -1), io.Discard)
		var fe *formats.Error
		if !errors.As(err, &fe) || !strings.Contains(fe.What, "redacted console command") {
			t.Errorf("redact from %d: %v, want a *formats.Error about the redacted command", from, err)
		}
	}
}
