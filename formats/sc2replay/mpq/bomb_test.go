// Decompression bombs against the MPQ reader: each is refused
// with a clear error before it allocates, or stays within the budget.

package mpq_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/sc2replay/mpq"
	"github.com/replayarchive/replay/internal/memtest"
	"github.com/replayarchive/replay/internal/mpqtest"
)

// bzip2Zeros is `bzip2 -9` of 128 MiB of zeros (112 bytes: Go has no bzip2
// writer). TestBombs decompresses its first 4 MiB, which checks it.
const bzip2Zeros = "425a68393141592653590e09e2df015f8e4000c0000008200030804d4642a025a90a80973141592653590e09e2df015f8e4000c0000008200030804d4642a025a90a809731415926535981f39ae30144e74000c4000008200030cc0529a65454426c5515109e2ee48a70a1214b8fa842"

func TestBombs(t *testing.T) {
	const zeros = 128 << 20
	bz, _ := hex.DecodeString(bzip2Zeros)
	bz = append([]byte{mpqtest.MaskBzip2}, bz...)
	sector := mpqtest.ZlibZeros(512)
	secs := make([][]byte, zeros/512)
	for i := range secs {
		secs[i] = sector
	}
	sectored := mpqtest.Sectors(secs)
	single := uint32(mpq.FlagSingleUnit | mpq.FlagCompress)
	for _, tc := range []struct {
		name   string
		file   mpqtest.File
		budget int64  // 0: the default
		want   string // "" when the file decompresses within the budget
		alloc  uint64 // bound on bytes allocated
	}{
		{"zlib single unit, 32 MiB", mpqtest.File{Data: mpqtest.ZlibZeros(32 << 20), Size: 32 << 20, Flags: single}, 0, "", 48 << 20},
		// Refused on the declared size: the data is never read.
		{"zlib single unit over the file limit", mpqtest.File{Data: sector, Size: zeros + 512, Flags: single}, 0,
			"exceeds the 134217728-byte limit", 1 << 20},
		{"bzip2 past the budget left", mpqtest.File{Data: bz, Size: zeros, Flags: single}, 64 << 20,
			"exceeds the 67108864 bytes left of the archive's 67108864-byte decompression budget", 1 << 20},
		{"262,144 zlib sectors of 512 bytes", mpqtest.File{Data: sectored, Size: zeros, Flags: mpq.FlagCompress}, 0,
			"needs 262144 sectors, expected at most 65536", 1 << 20},
		{"bzip2 of 128 MiB declaring 4 MiB", mpqtest.File{Data: bz, Size: 4 << 20, Flags: single}, 0,
			"stream holds more than the declared 4194304 bytes", 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.file.Name = "replay.message.events"
			a, err := mpq.Open(mpqtest.Build([]byte("user data"), 0, []mpqtest.File{tc.file}))
			if err != nil {
				t.Fatal(err)
			}
			if a.Budget != mpq.DefaultBudget || mpq.DefaultBudget != 256<<20 {
				t.Fatalf("budget %d, want 256 MiB", a.Budget)
			}
			if tc.budget != 0 {
				a.Budget = tc.budget
			}
			var out []byte
			grew := memtest.Allocated(func() { out, err = a.ReadFile(tc.file.Name) })
			if tc.want == "" {
				if err != nil || len(out) != int(tc.file.Size) || bytes.ContainsFunc(out, func(r rune) bool { return r != 0 }) {
					t.Fatalf("got %d bytes, %v; want %d zeros", len(out), err, tc.file.Size)
				}
			} else {
				var fe *formats.Error
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want a *formats.Error mentioning %q", err, tc.want)
				}
			}
			if grew > memtest.Bound(tc.alloc) {
				t.Errorf("allocated %d bytes, want at most %d", grew, memtest.Bound(tc.alloc))
			}
			t.Logf("allocated %.1f MiB", float64(grew)/(1<<20))
		})
	}
}

// TestBudgetAcrossFiles reads three files that share one compressed block:
// together they would exceed the budget, so the third read is refused.
func TestBudgetAcrossFiles(t *testing.T) {
	zl := mpqtest.ZlibZeros(10 << 20)
	var files []mpqtest.File
	for _, name := range []string{"a", "b", "c"} {
		files = append(files, mpqtest.File{Name: name, Data: zl, Size: 10 << 20, Flags: mpq.FlagSingleUnit | mpq.FlagCompress})
	}
	a, err := mpq.Open(mpqtest.Build(nil, 3, files))
	if err != nil {
		t.Fatal(err)
	}
	a.Budget = 25 << 20
	for i, name := range []string{"a", "b", "c"} {
		_, err := a.ReadFile(name)
		if i < 2 && err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if i == 2 && (err == nil || !strings.Contains(err.Error(), "exceeds the 5242880 bytes left")) {
			t.Fatalf("%s: got %v, want the budget to refuse it", name, err)
		}
	}
}
