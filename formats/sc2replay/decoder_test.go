// Tests for our bounded versioned and bit-packed decoders: the same values
// as s2prot on every corpus replay, and hostile lengths refused before they
// allocate.

package sc2replay

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/icza/s2prot"
	"github.com/icza/s2prot/build"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/memtest"
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

// crasher is an input FuzzVersioned found: as replay.details it made
// s2prot's versioned decoder ask for about 212 GB.
var crasher = []byte{0x05, 0x02, 0x00, 0x02, 0x04, 0x30, 0xfe, 0xa2, 0xca, 0x8c, 0x63, 0x8f, 0xaa, 0xd5, 0x30}

// TestProtocolsParse parses every table s2prot ships: a table that did not
// parse would silently turn its builds header-only.
func TestProtocolsParse(t *testing.T) {
	n := 0
	for b, src := range build.Builds {
		p, err := parseProtocol(b, src)
		if err != nil {
			t.Errorf("%d: %v", b, err)
			continue
		}
		if want := strings.Count(src, "),  #"); len(p.types) != want {
			t.Errorf("%d: %d types, want %d", b, len(p.types), want)
		}
		if (b >= 24944) != (p.tracker != nil) {
			t.Errorf("%d: tracker events table present = %v", b, p.tracker != nil)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d tables", n)
	}
}

// TestDecodeLikeS2prot decodes details, initData and every event stream of
// every corpus replay with a table both ways and wants identical values.
func TestDecodeLikeS2prot(t *testing.T) {
	for name, data := range corpus(t) {
		r, err := openReplay(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.proto == nil || r.guessed {
			continue // s2prot has no table to compare with
		}
		sp := s2prot.GetProtocol(r.baseBuild)
		if sp == nil {
			t.Fatalf("%s: s2prot has no protocol for %d", name, r.baseBuild)
		}
		if b, _, err := r.stream(fileDetails, fileDetailsBackup); err == nil {
			ours, used, err := decodeVersioned(r.proto, b, r.proto.details)
			if err != nil || used != len(b) || !reflect.DeepEqual(ours, sp.DecodeDetails(b)) {
				t.Errorf("%s: details differ from s2prot (err %v, used %d of %d)", name, err, used, len(b))
			}
		}
		if b, _, err := r.stream(fileInitData, fileInitBackup); err == nil {
			ours, used, err := decodeBitPacked(r.proto, b, r.proto.initData)
			if err != nil || used != len(b) || !reflect.DeepEqual(ours, sp.DecodeInitData(b)) {
				t.Errorf("%s: initData differs from s2prot (err %v, used %d of %d)", name, err, used, len(b))
			}
		}
		for _, s := range []struct {
			file string
			dec  func([]byte) ([]s2prot.Event, error)
		}{{fileGameEvents, sp.DecodeGameEvts}, {fileMessageEvents, sp.DecodeMessageEvts}, {fileTrackerEvents, sp.DecodeTrackerEvts}} {
			b, _, err := r.stream(s.file)
			if err != nil {
				continue
			}
			es, _ := r.proto.stream(s.file)
			ours, err := decodeEvents(r.proto, b, es)
			theirs, terr := s.dec(b)
			if err != nil || terr != nil || len(ours) != len(theirs) || len(ours) == 0 {
				t.Errorf("%s %s: %d events (%v), s2prot %d (%v)", name, s.file, len(ours), err, len(theirs), terr)
				continue
			}
			for i := range ours {
				if !reflect.DeepEqual(ours[i].Struct, theirs[i].Struct) || ours[i].Name != theirs[i].Name || ours[i].ID != theirs[i].ID {
					t.Errorf("%s %s: event %d differs: ours %v, s2prot %v", name, s.file, i, ours[i].Struct, theirs[i].Struct)
					break
				}
			}
		}
	}
}

// TestDecodeValueDensity measures how many values real streams decode to
// per byte: valuesPerByte must leave them room.
func TestDecodeValueDensity(t *testing.T) {
	worst, worstName := 0.0, ""
	for name, data := range corpus(t) {
		r, err := openReplay(data)
		if err != nil || r.proto == nil {
			continue
		}
		for _, file := range []string{fileDetails, fileInitData, fileGameEvents, fileMessageEvents, fileTrackerEvents} {
			b, _, err := r.stream(file, file+".backup")
			if err != nil || len(b) < 1024 {
				continue
			}
			d := newDec(r.proto, b)
			budget := d.values
			switch file {
			case fileDetails:
				err = d.run(func() { versioned{d}.instance(r.proto.details, 0) })
			case fileInitData:
				err = d.run(func() { bitPacked{d}.instance(r.proto.initData, 0) })
			default:
				es, _ := r.proto.stream(file)
				var n int
				err = d.run(func() {
					for !d.done() {
						countEvent(d, es, &n)
					}
				})
			}
			if err != nil {
				t.Errorf("%s %s: %v", name, file, err)
			}
			if v := float64(budget-d.values) / float64(len(b)); v > worst {
				worst, worstName = v, name+" "+file
			}
		}
	}
	t.Logf("densest stream: %.2f values per byte (%s)", worst, worstName)
	if worst*2 > valuesPerByte {
		t.Errorf("densest stream decodes to %.2f values per byte, within a factor 2 of the limit %d", worst, valuesPerByte)
	}
}

// countEvent decodes one event with d (the budget test's loop body).
func countEvent(d *dec, es eventStream, n *int) {
	inst := func(typeid int) any {
		if es.versioned {
			return versioned{d}.instance(typeid, 0)
		}
		return bitPacked{d}.instance(typeid, 0)
	}
	inst(d.p.svarUint32)
	if es.userID {
		inst(d.p.userID)
	}
	id, _ := inst(es.idType).(int64)
	inst(es.types[id].typeid)
	d.byteAlign()
	*n++
}

// TestHostileLengths feeds forged lengths to both decoders: each is refused
// with an error naming it, allocating next to nothing.
func TestHostileLengths(t *testing.T) {
	p := protocolFor(ProtocolBase)
	// Type ids of 80949 used below.
	widest := func(k kind) int {
		best := -1
		for i, ti := range p.types {
			if ti.kind == k && (best < 0 || ti.bits > p.types[best].bits) {
				best = i
			}
		}
		return best
	}
	arrayT, blobT, bitArrT, structT := widest(kArray), widest(kBlob), widest(kBitArray), p.details
	t.Logf("widest bounds: array %d bits, blob %d, bit array %d", p.types[arrayT].bits, p.types[blobT].bits, p.types[bitArrT].bits)
	if arrayT < 0 || blobT < 0 || bitArrT < 0 {
		t.Fatal("80949 lacks a wide array, blob or bit array type")
	}
	b := func(x ...byte) []byte { return x }
	ones := bytes.Repeat(b(0xff), 16)
	for _, tc := range []struct {
		name      string
		versioned bool
		typeid    int
		data      []byte
		want      string
	}{
		{"the fuzzer's crasher as details", true, p.details, crasher, "kind 2 where the table expects kind 4"},
		{"huge versioned array", true, arrayT, cat(b(0), vint(1<<40)), "array of 1099511627776 elements"},
		{"negative versioned array", true, arrayT, cat(b(0), vint(-1)), "array of -1 elements"},
		{"huge versioned blob", true, blobT, cat(b(2), vint(1<<33), b(1, 2)), "8589934592 bytes wanted"},
		{"huge versioned bit array", true, bitArrT, cat(b(1), vint(1<<40)), "bit array of 1099511627776 bits"},
		{"huge versioned struct", true, structT, cat(b(5), vint(1<<20)), "struct of 1048576 fields"},
		{"long vint", true, structT, cat(b(5), ones), "longer than 64 bits"},
		{"cut", true, structT, b(5), "cut short"},
		{"empty", true, structT, nil, "cut short"},
		{"bit-packed array", false, arrayT, ones, "array of"},
		{"bit-packed blob", false, blobT, ones, "bytes wanted"},
		{"bit-packed bit array", false, bitArrT, ones, "bit array of"},
		{"bit-packed initData of ones", false, p.initData, ones, ""},
	} {
		var err error
		grew := memtest.Allocated(func() {
			if tc.versioned {
				_, _, err = decodeVersioned(p, tc.data, tc.typeid)
			} else {
				_, _, err = decodeBitPacked(p, tc.data, tc.typeid)
			}
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", tc.name, err, tc.want)
		}
		if grew > 64<<10 {
			t.Errorf("%s: allocated %d bytes for %d bytes of input", tc.name, grew, len(tc.data))
		}
	}
}

// TestZeroBitArrays checks the value budget: an array whose elements take no
// bits cannot repeat them for free.
func TestZeroBitArrays(t *testing.T) {
	p := &protocol{types: []typeInfo{
		{kind: kArray, bits: 32, elem: 1},
		{kind: kNull},
	}, minBits: []int{32, 0}}
	var err error
	grew := memtest.Allocated(func() { _, _, err = decodeBitPacked(p, []byte{0xff, 0xff, 0xff, 0xff}, 0) })
	if err == nil || !strings.Contains(err.Error(), "more values than a 4-byte blob can hold") {
		t.Errorf("got %v, want the value budget to stop the array", err)
	}
	if grew > 1<<20 {
		t.Errorf("allocated %d bytes", grew)
	}
}

// fuzzSeeds adds a corpus replay's streams (cut to 2 KiB) to f.
func fuzzSeeds(f *testing.F, files ...string) {
	path := filepath.Join(formatstest.ModuleRoot(f), "..", "shared", "corpus", "sc2replay", "lotv-5.0.0.80949-jiaann-vs-rairden.SC2Replay")
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	r, err := openReplay(data)
	if err != nil {
		return
	}
	for _, name := range files {
		if b, _, err := r.stream(name); err == nil {
			f.Add(b[:min(len(b), 2048)])
		}
	}
}

// fuzzBound is the most a fuzz input may allocate while decoding: a few
// hundred bytes per input byte (every value costs a few dozen) plus the
// fixed cost of the slack.
func fuzzBound(n int) uint64 { return uint64(n)*1024 + 4<<20 }

// FuzzVersioned feeds arbitrary bytes to the versioned decoder as details,
// replay header and tracker events: it must fail cleanly, never panic, and
// allocate in proportion to the input.
func FuzzVersioned(f *testing.F) {
	f.Add(crasher)
	f.Add(cat([]byte{5}, vint(1), vint(0), []byte{2}, vint(2), []byte("hi")))
	f.Add(cat([]byte{0}, vint(3), []byte{9, 2, 9, 4, 6, 1}))
	fuzzSeeds(f, fileDetails, fileTrackerEvents)
	p := protocolFor(ProtocolBase)
	es, _ := p.stream(fileTrackerEvents)
	f.Fuzz(func(t *testing.T, b []byte) {
		grew := memtest.Allocated(func() {
			decodeVersioned(p, b, p.details)
			decodeVersioned(p, b, p.header)
			decodeEvents(p, b, es)
		})
		if grew > fuzzBound(len(b)) {
			t.Fatalf("%d bytes allocated for %d bytes of input", grew, len(b))
		}
	})
}

// FuzzBitPacked feeds arbitrary bytes to the bit-packed decoder as
// initData, game events and message events.
func FuzzBitPacked(f *testing.F) {
	f.Add(crasher)
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	fuzzSeeds(f, fileInitData, fileGameEvents, fileMessageEvents)
	p := protocolFor(ProtocolBase)
	game, _ := p.stream(fileGameEvents)
	msg, _ := p.stream(fileMessageEvents)
	f.Fuzz(func(t *testing.T, b []byte) {
		grew := memtest.Allocated(func() {
			decodeBitPacked(p, b, p.initData)
			decodeEvents(p, b, game)
			decodeEvents(p, b, msg)
		})
		if grew > fuzzBound(len(b)) {
			t.Fatalf("%d bytes allocated for %d bytes of input", grew, len(b))
		}
	})
}
