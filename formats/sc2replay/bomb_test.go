// Hostile replays, built by the test from a corpus replay:
// decompression bombs in the inner files and the versioned-decoder crasher
// end in a clear error (or a warning naming it), within the memory budget.

package sc2replay

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/sc2replay/mpq"
	"github.com/replayarchive/replay/internal/memtest"
	"github.com/replayarchive/replay/internal/mpqtest"
)

// bzip2Zeros is `bzip2 -9` of 128 MiB of zeros (Go has no bzip2 writer);
// package mpq's TestBombs decompresses it.
const bzip2Zeros = "425a68393141592653590e09e2df015f8e4000c0000008200030804d4642a025a90a80973141592653590e09e2df015f8e4000c0000008200030804d4642a025a90a809731415926535981f39ae30144e74000c4000008200030cc0529a65454426c5515109e2ee48a70a1214b8fa842"

// innerFiles are the inner files a rebuilt replay carries over.
var innerFiles = []string{fileDetails, fileInitData, fileGameEvents, fileMessageEvents, fileTrackerEvents, fileAttributes}

// rebuild repacks the replay in data with the inner files of swap replacing
// (or adding to) its own, which are stored uncompressed.
func rebuild(t testing.TB, data []byte, swap ...mpqtest.File) []byte {
	t.Helper()
	arc, err := mpq.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	var files []mpqtest.File
	for _, name := range innerFiles {
		if i := slicesIndex(swap, name); i >= 0 {
			files = append(files, swap[i])
			continue
		}
		b, err := arc.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		files = append(files, mpqtest.File{Name: name, Data: b, Size: uint32(len(b)), Flags: mpq.FlagSingleUnit})
	}
	return mpqtest.Build(arc.UserData(), 0, files) // 512-byte sectors
}

func slicesIndex(fs []mpqtest.File, name string) int {
	for i, f := range fs {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// TestBombs splits each hostile replay and reads its frames: every bomb
// ends in a *formats.Error naming what was expected (as a warning when only
// chat is lost), and no run allocates more than the 256 MiB budget.
func TestBombs(t *testing.T) {
	base := corpus(t)["lotv-5.0.0.80949-jiaann-vs-rairden.SC2Replay"]
	const zeros = 128 << 20
	single := uint32(mpq.FlagSingleUnit | mpq.FlagCompress)
	bz, _ := hex.DecodeString(bzip2Zeros)
	bz = append([]byte{mpqtest.MaskBzip2}, bz...)
	sector := mpqtest.ZlibZeros(512)
	secs := make([][]byte, zeros/512)
	for i := range secs {
		secs[i] = sector
	}
	sectored := mpqtest.Sectors(secs)
	zl := mpqtest.ZlibZeros(zeros)
	msg := func(data []byte, size uint32, flags uint32) mpqtest.File {
		return mpqtest.File{Name: fileMessageEvents, Data: data, Size: size, Flags: flags}
	}
	for _, tc := range []struct {
		name  string
		swap  mpqtest.File
		split string // the Split error, or the warning when Split succeeds
		warn  bool
		frame string // the Frames error
	}{
		{"message events: 128 MiB of zeros, zlib", msg(zl, zeros, single), "expected replay.message.events of at most 16777216 bytes, the block declares 134217728", true, "at most 16777216 bytes"},
		{"message events: 128 MiB of zeros, bzip2", msg(bz, zeros, single), "expected replay.message.events of at most 16777216 bytes", true, "at most 16777216 bytes"},
		{"message events: 128 MiB of zeros, plain", msg(make([]byte, 1<<20), zeros, mpq.FlagSingleUnit), "expected replay.message.events of at most 16777216 bytes", true, "at most 16777216 bytes"},
		{"message events: 262,144 zlib sectors of 512 B", msg(sectored, zeros, mpq.FlagCompress), "expected replay.message.events of at most 16777216 bytes", true, "at most 16777216 bytes"},
		{"message events: 256 KiB of zeros, zlib", msg(mpqtest.ZlibZeros(256<<10), 256<<10, single), "expected at most 32768 events in replay.message.events", true, ""},
		{"game events: 262,144 zlib sectors of 512 B", mpqtest.File{Name: fileGameEvents, Data: sectored, Size: zeros, Flags: mpq.FlagCompress}, "", true, "needs 262144 sectors, expected at most 65536"},
		{"game events: 128 MiB of zeros, zlib", mpqtest.File{Name: fileGameEvents, Data: zl, Size: zeros, Flags: single}, "", true, "replay.game.events"},
		{"details: the fuzzer's crasher", mpqtest.File{Name: fileDetails, Data: crasher, Size: uint32(len(crasher)), Flags: mpq.FlagSingleUnit}, "expected valid replay.details", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := rebuild(t, base, tc.swap)
			var rec *formatstest.Recording
			var err error
			grew := memtest.Allocated(func() { rec, err = formatstest.TrySplit(New(), data) })
			if grew > memtest.Bound(uint64(mpq.DefaultBudget)) {
				t.Errorf("Split allocated %d bytes, more than the %d-byte budget", grew, mpq.DefaultBudget)
			}
			if !tc.warn {
				var fe *formats.Error
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.split) {
					t.Fatalf("Split: got %v, want a *formats.Error mentioning %q", err, tc.split)
				}
				return
			}
			if err != nil {
				t.Fatalf("Split: %v", err)
			}
			if w := strings.Join(rec.Metadata.Warnings, "\n"); !strings.Contains(w, tc.split) {
				t.Errorf("warnings %q, want one mentioning %q", w, tc.split)
			}
			if len(rec.Metadata.Players) != 2 || rec.Metadata.Map == "" {
				t.Errorf("metadata lost: %d players, map %q", len(rec.Metadata.Players), rec.Metadata.Map)
			}
			frames := 0
			peak := memtest.Peak(func() {
				err = New().Frames(context.Background(), rec.Source(), formats.All(), func(formats.Frame) error {
					frames++
					return nil
				})
			})
			var fe *formats.Error
			if tc.frame == "" && err != nil || tc.frame != "" && (!errors.As(err, &fe) || !strings.Contains(err.Error(), tc.frame)) {
				t.Errorf("Frames: got %v after %d frames, want a *formats.Error mentioning %q", err, frames, tc.frame)
			}
			if peak > memtest.Bound(uint64(mpq.DefaultBudget)) {
				t.Errorf("Frames peaked at %d bytes of heap, more than the %d-byte budget", peak, memtest.Bound(uint64(mpq.DefaultBudget)))
			}
			t.Logf("Split allocated %.1f MiB; warnings %q; Frames: %d frames, heap peak %.1f MiB, then %v",
				float64(grew)/(1<<20), rec.Metadata.Warnings, frames, float64(peak)/(1<<20), err)
		})
	}
}
