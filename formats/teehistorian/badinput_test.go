// Bad-input tests: truncations and byte flips of real files must give a
// *formats.Error or a valid shorter recording, never a panic, and length
// fields must not make the reader allocate more than the file holds.

package teehistorian

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/memtest"
)

func TestBadInputCorpus(t *testing.T) {
	for name, file := range corpusFiles(t) {
		stride := max(1, len(file)/150)
		errs := formatstest.CheckBadInput(t, &Codec{ChunkSize: 1024}, file, stride)
		t.Logf("%s: %d of about %d variants errored", name, errs, 2*len(file)/stride)
	}
}

// TestTruncation cuts a real file at record boundaries (a valid shorter
// recording with a warning) and inside records (a *formats.Error at the
// record's offset).
func TestTruncation(t *testing.T) {
	file := corpusFiles(t)["a227b0a8-bc1a-4946-b1f0-e663e1d6c8c1.teehistorian"]
	if file == nil {
		t.Fatal("corpus file a227b0a8 missing")
	}
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		off  int64
		size int
		tick int64
	}
	var recs []rec
	for {
		it, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec{it.Offset, it.Size, it.Tick})
	}
	codec := &Codec{ChunkSize: 512}
	for i := 0; i < len(recs)-1; i += 7 {
		r := recs[i]
		// Cut right after record i: valid, ends without FINISH.
		cut := file[:r.off+int64(r.size)]
		got, err := formatstest.TrySplit(codec, cut)
		if err != nil {
			t.Fatalf("cut after record %d at %d: %v", i, len(cut), err)
		}
		if w := got.Metadata.Warnings; len(w) != 1 || !strings.Contains(w[0], "without FINISH at tick") || got.Metadata.Ticks != r.tick+1 {
			t.Fatalf("cut after record %d: warnings %q ticks %d, want tick %d", i, w, got.Metadata.Ticks, r.tick)
		}
		// Cut inside record i+1 (when it has more than one byte).
		if n := recs[i+1]; n.size > 1 {
			_, err := formatstest.TrySplit(codec, file[:n.off+int64(n.size)-1])
			var fe *formats.Error
			if !errors.As(err, &fe) || fe.Offset != n.off || !strings.Contains(fe.What, "complete record") {
				t.Fatalf("cut inside record %d: %v", i+1, err)
			}
		}
	}
	// Cut inside the header.
	for _, n := range []int{0, 5, 16, 100, 3000} {
		_, err := formatstest.TrySplit(codec, file[:n])
		var fe *formats.Error
		if !errors.As(err, &fe) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
}

func TestBadRecords(t *testing.T) {
	hj, _ := testHeader().MarshalJSON()
	head := append(append(Magic[:], hj...), 0)
	for _, tc := range []struct {
		name, body, what string
	}{
		{"unknown type", "4b", "expected an item type"},
		{"diff before new", "00 01 01", "PLAYER_NEW first"},
		{"input diff before new", "44 00 00 00 00 00 00 00 00 00 00 00", "after an INPUT_NEW"},
		{"negative size", "46 00 40", "non-negative MESSAGE size"},
		{"negative skip", "41 40", "non-negative TICK_SKIP"},
		{"cid too big", "42 bf ff ff ff 07 00 00", "client id"},
		{"huge message", "46 00 bf ff ff ff 07 00 01 02", "MESSAGE size at most"},
		{"huge ex", "4a 86 6b fd ac fb 49 3c 0b a8 87 5f e1 f3 ea 00 b8 bf ff ff ff 07", "EX size at most"},
		{"message cut short", "46 00 bf 80 01 00 01 02", "complete record"},
		{"arg count", "49 00 00 61 00 bf ff ff ff 07", "argument count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := append(bytes.Clone(head), unhex(t, tc.body)...)
			var err error
			d := memtest.Allocated(func() { _, err = formatstest.TrySplit(New(), file) })
			var fe *formats.Error
			if !errors.As(err, &fe) || !strings.Contains(fe.What, tc.what) || fe.Offset < int64(len(head)) {
				t.Fatalf("got %v, want a formats.Error about %q", err, tc.what)
			}
			if d > 4<<20 {
				t.Errorf("allocated %d bytes for a %d-byte file", d, len(file))
			}
		})
	}
	// Bytes after FINISH are kept (in the last chunk) with a warning.
	file := append(bytes.Clone(head), 0x40, 1, 2, 3)
	rec := formatstest.Split(t, New(), file)
	if w := rec.Metadata.Warnings; len(w) != 1 || !strings.Contains(w[0], "3 bytes after FINISH") {
		t.Errorf("warnings %q", w)
	}
	// A version 1 file has no EX items.
	v1 := append(append(Magic[:], `{"version":"1","game_uuid":"a1eb7182-796e-3b3e-941d-38ca71b2a4a8","server_port":8303,"map_size":5,"start_time":"2017-09-12 10:00:00 +0200"}`...), 0)
	m := formatstest.Split(t, New(), append(bytes.Clone(v1), 0x40)).Metadata
	if m.Attrs["server_port"] != "8303" || m.Start.IsZero() {
		t.Errorf("v1 header: attrs %v start %v", m.Attrs, m.Start)
	}
	_, err := formatstest.TrySplit(New(), append(bytes.Clone(v1), unhex(t, "4a 86 6b fd ac fb 49 3c 0b a8 87 5f e1 f3 ea 00 b8 00")...))
	if err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("EX in v1: %v", err)
	}
}

// TestHugeTickGaps clips a file whose ticks pass 2^31 through several
// TICK_SKIPs: the clip must write the gap as several TICK_SKIPs too.
func TestHugeTickGaps(t *testing.T) {
	hj, _ := testHeader().MarshalJSON()
	file := append(append(Magic[:], hj...), 0)
	file = append(file, unhex(t, "41 bf ff ff ff 0f 41 bf ff ff ff 0f 42 00 01 02 41 05 00 01 01 40")...)
	rec := formatstest.Split(t, New(), file)
	last := rec.Metadata.Ticks - 1
	if last != 2*(1<<31)+6 {
		t.Fatalf("last tick %d", last)
	}
	for _, from := range []int64{0, 1 << 31, last - 6, last} {
		checkClip(t, New(), file, from, -1)
	}
}
