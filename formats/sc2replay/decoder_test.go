// Tests for the versioned-encoding walker that guards s2prot's allocations.

package sc2replay

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icza/s2prot"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// vint encodes n as a versioned variable-length integer.
func vint(n int64) []byte {
	u := uint64(n) << 1
	if n < 0 {
		u = uint64(-n)<<1 | 1
	}
	var out []byte
	for {
		c := byte(u & 0x7f)
		u >>= 7
		if u == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestCheckVersioned(t *testing.T) {
	b := func(x ...byte) []byte { return x }
	validStruct := cat(b(5), vint(3), vint(0), b(9), vint(-5), vint(1), b(2), vint(3), []byte("abc"), vint(2), b(0), vint(2), b(6, 1), b(7, 1, 2, 3, 4))
	deep := bytes.Repeat(cat(b(3), vint(0)), 100)
	for _, tc := range []struct {
		name   string
		data   []byte
		stream bool
		want   string // "" for valid
	}{
		{"struct", validStruct, false, ""},
		{"two values as a stream", cat(validStruct, b(8, 1, 2, 3, 4, 5, 6, 7, 8)), true, ""},
		{"trailing bytes ignored for one value", cat(validStruct, b(0xff)), false, ""},
		{"trailing junk in a stream", cat(validStruct, b(0xff)), true, "unknown value kind 255"},
		{"optional", cat(b(4, 1), b(9), vint(7), b(4, 0)), true, ""},
		{"bit blob", cat(b(1), vint(12), b(0xff, 0x0f)), false, ""},
		{"huge array", cat(b(0), vint(1<<40)), false, "array of 1099511627776 values"},
		{"negative array", cat(b(0), vint(-1)), false, "array of -1 values"},
		{"huge blob", cat(b(2), vint(1<<33), b(1, 2)), false, "blob of 8589934592 bytes"},
		{"huge bit blob", cat(b(1), vint(1<<40)), false, "bit blob of"},
		{"huge struct", cat(b(5), vint(1<<20)), false, "struct of 1048576 fields"},
		{"deep", cat(deep, b(9), vint(1)), false, "nested deeper than 64"},
		{"long vint", cat(b(9), bytes.Repeat(b(0xff), 11)), false, "longer than 64 bits"},
		{"cut vint", b(9, 0x80), false, "cut short"},
		{"cut u32", b(7, 1, 2), false, "u32 of 4 bytes runs past"},
		{"empty", nil, false, "value cut short"},
	} {
		err := checkVersioned(tc.data, 1000, "test stream", tc.stream)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var fe *formats.Error
		if !errors.As(err, &fe) || fe.Offset != 1000 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a *formats.Error at 1000 mentioning %q", tc.name, err, tc.want)
		}
	}
}

// FuzzVersioned feeds arbitrary bytes to the walker and, when it accepts
// them, to s2prot's versioned decoders, which must then fail cleanly.
func FuzzVersioned(f *testing.F) {
	f.Add(cat([]byte{5}, vint(1), vint(0), []byte{2}, vint(2), []byte("hi")))
	f.Add(cat([]byte{0}, vint(3), []byte{9, 2, 9, 4, 6, 1}))
	path := filepath.Join(formatstest.ModuleRoot(f), "..", "shared", "corpus", "sc2replay", "lotv-5.0.0.80949-jiaann-vs-rairden.SC2Replay")
	if data, err := os.ReadFile(path); err == nil {
		if r, err := openReplay(data); err == nil {
			if b, _, err := r.stream(fileDetails); err == nil {
				f.Add(b)
			}
			if b, _, err := r.stream(fileTrackerEvents); err == nil {
				f.Add(b[:min(len(b), 2048)])
			}
		}
	}
	proto := s2prot.GetProtocol(ProtocolBase)
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkVersioned(b, 0, "fuzz", false) == nil {
			guard(0, "details", func() { proto.DecodeDetails(b) })
		}
		if checkVersioned(b, 0, "fuzz", true) == nil {
			guard(0, "tracker events", func() { proto.DecodeTrackerEvts(b) })
		}
	})
}
