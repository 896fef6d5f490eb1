package chunkenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// serverHeader returns a header of the kind a game server writes: the
// same keys and most values for one server, a few fields per game.
func serverHeader(server, game int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"comment":"teehistorian@ddnet.tw","version":"2","game_uuid":"%08x-0000-4000-8000-%012x",`, game*7919, game)
	fmt.Fprintf(&b, `"server_version":"0.6.4, 17.%d","start_time":"2026-11-%02dT12:%02d:00+0100",`, server, 1+game%28, game%60)
	fmt.Fprintf(&b, `"server_name":"Server %d of the network","server_port":"%d","game_type":"DDraceNetwork","map_name":"map%d","config":{`, server, 8300+server, server)
	// Each server sets its own keys to its own values.
	x := uint32(server)*2654435761 + 12345
	for range 40 {
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, `"sv_%08x":"%d",`, x, x>>20)
	}
	b.WriteString(`"end":"1"}}`)
	return []byte(b.String())
}

func TestDictID(t *testing.T) {
	a, b := []byte("one dictionary's content"), []byte("another dictionary's content")
	if DictID(a) != DictID(bytes.Clone(a)) {
		t.Error("the same content gave two ids")
	}
	if DictID(a) == DictID(b) {
		t.Error("two contents gave one id")
	}
	for _, c := range [][]byte{a, b, nil, make([]byte, 100)} {
		if id := DictID(c); id < minDictID || id > maxDictID {
			t.Errorf("id %d outside zstd's private range %d..%d", id, minDictID, maxDictID)
		}
	}
}

// TestHeadsTrainer offers the headers of three servers, newest first, many
// games each: the dictionary takes a header of each server and leaves the
// others' repeats out, and compresses an unseen game's header of each
// server to a fraction of what it takes alone.
func TestHeadsTrainer(t *testing.T) {
	var tr HeadsTrainer
	for game := 100; game > 0; game-- {
		tr.Offer(serverHeader(game%3, game))
	}
	if tr.Offered != 100 || tr.Taken < 3 || tr.Taken > 6 {
		t.Fatalf("offered %d, took %d: want 100 offered, about one a server taken", tr.Offered, tr.Taken)
	}
	content := tr.Content()
	if len(content) > MaxDictBytes {
		t.Fatalf("content %d bytes, more than %d", len(content), MaxDictBytes)
	}
	// The newest header taken sits last.
	if newest := serverHeader(100%3, 100); !bytes.HasSuffix(content, newest) {
		t.Error("the newest header taken is not the content's end")
	}
	enc, err := zstd.NewWriter(nil, HeadsEncoderOptions(content)...)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := zstd.NewWriter(nil, HeadsEncoderOptions(nil)[:4]...)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(DictID(content), content))
	if err != nil {
		t.Fatal(err)
	}
	for server := range 3 {
		h := serverHeader(server, 1000+server)
		with, without := enc.EncodeAll(h, nil), plain.EncodeAll(h, nil)
		if len(with)*4 > len(without) {
			t.Errorf("server %d: %d bytes with the dictionary, %d without: want under a quarter", server, len(with), len(without))
		}
		if got, err := dec.DecodeAll(with, nil); err != nil || !bytes.Equal(got, h) {
			t.Errorf("server %d: does not decode back: %v", server, err)
		}
	}
}

// TestHeadsTrainerFull stops taking headers at MaxDictBytes and says so.
func TestHeadsTrainerFull(t *testing.T) {
	var tr HeadsTrainer
	full := false
	for server := 0; !full; server++ {
		if server > 1000 {
			t.Fatal("never full")
		}
		full = tr.Offer(serverHeader(server, server))
	}
	if n := len(tr.Content()); n > MaxDictBytes || n < MaxDictBytes/2 {
		t.Errorf("full at %d bytes, want near %d", n, MaxDictBytes)
	}
}

func TestDictRecord(t *testing.T) {
	content := append(serverHeader(1, 1), serverHeader(2, 2)...)
	d := Dict{ID: DictID(content), Format: "teehistorian", Created: time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC), Headers: 42, Content: content}
	enc := newEncoder(t, EncoderOptions())
	rec := EncodeDict(enc, d)
	if len(rec) >= len(content) {
		t.Errorf("record %d bytes for %d of content: want it compressed", len(rec), len(content))
	}
	got, err := DecodeDict(DictKey(d.ID), rec)
	if err != nil {
		t.Fatal(err)
	}
	d.Stored = len(rec)
	if got.ID != d.ID || got.Format != d.Format || !got.Created.Equal(d.Created) || got.Headers != d.Headers || got.Stored != d.Stored || !bytes.Equal(got.Content, content) {
		t.Errorf("decoded %+v, want %+v", got, d)
	}

	other := Dict{ID: DictID([]byte("something else entirely")), Format: "x", Content: []byte("something else entirely")}
	otherRec := EncodeDict(enc, other)
	for _, tc := range []struct {
		name     string
		key, rec []byte
		want     string
	}{
		{"another id", DictKey(d.ID + 1), rec, "does not match its id"},
		{"another's content", DictKey(d.ID), append(recHead(d), otherRec[len(recHead(other)):]...), "does not match its id"},
		{"short key", []byte{1, 2}, rec, "key of 2 bytes"},
		{"newer version", DictKey(d.ID), append([]byte{9}, rec[1:]...), "unknown record version"},
		{"empty", DictKey(d.ID), nil, "unknown record version"},
		{"format past the end", DictKey(d.ID), []byte{1, 100, 'a'}, "format name of 100 bytes"},
		{"truncated", DictKey(d.ID), rec[:len(rec)-5], "content"},
		{"bomb", DictKey(d.ID), append(recHead(d), bomb(t)...), "content"},
	} {
		_, err := DecodeDict(tc.key, tc.rec)
		if err == nil {
			t.Errorf("%s: decoded", tc.name)
			continue
		}
		if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

// recHead returns the record of d up to its content.
func recHead(d Dict) []byte {
	out := []byte{dictRecordVersion}
	out = binary.AppendUvarint(out, uint64(len(d.Format)))
	out = append(out, d.Format...)
	out = binary.AppendUvarint(out, uint64(max(d.Created.Unix(), 0)))
	return binary.AppendUvarint(out, uint64(d.Headers))
}

// bomb returns a zstd frame of 64 MiB of zeros.
func bomb(t *testing.T) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll(make([]byte, 64<<20), nil)
}

func TestHeadsDictID(t *testing.T) {
	content := serverHeader(1, 1)
	withDict, err := zstd.NewWriter(nil, HeadsEncoderOptions(content)...)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := zstd.NewWriter(nil, EncoderOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(DictID(content), content))
	if err != nil {
		t.Fatal(err)
	}
	h, tr := serverHeader(1, 2), []byte("the trailer of the file, long enough to compress")
	for _, tc := range []struct {
		name            string
		enc             *zstd.Encoder
		header, trailer []byte
		want            uint32
	}{
		{"plain", plain, h, tr, 0},
		{"dictionary", withDict, h, tr, DictID(content)},
		{"dictionary, no header", withDict, nil, tr, DictID(content)},
		{"dictionary, no trailer", withDict, h, nil, DictID(content)},
		{"nothing", withDict, nil, nil, 0},
	} {
		rec := EncodeHeads(tc.enc, tc.header, tc.trailer)
		id, err := HeadsDictID(rec)
		if err != nil || id != tc.want {
			t.Errorf("%s: dictionary %d, %v; want %d", tc.name, id, err, tc.want)
		}
		gh, gt, err := DecodeHeads(dec, rec, int64(len(tc.header)), int64(len(tc.trailer)))
		if err != nil || !bytes.Equal(gh, tc.header) || !bytes.Equal(gt, tc.trailer) {
			t.Errorf("%s: decoded %q %q, %v", tc.name, gh, gt, err)
		}
	}
	// A decoder without the dictionary names it.
	bare, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = DecodeHeads(bare, EncodeHeads(withDict, h, nil), int64(len(h)), 0)
	if !errors.Is(err, zstd.ErrUnknownDictionary) || !strings.Contains(err.Error(), fmt.Sprint(DictID(content))) {
		t.Errorf("without the dictionary: %v, want an unknown dictionary error naming %d", err, DictID(content))
	}
	if _, err := HeadsDictID([]byte{200}); err == nil {
		t.Error("a corrupt record gave no error")
	}
}

// FuzzDecodeDict: no record panics or allocates beyond a dictionary.
func FuzzDecodeDict(f *testing.F) {
	content := serverHeader(1, 1)
	rec := EncodeDict(newEncoder(f, EncoderOptions()), Dict{Format: "teehistorian", Content: content})
	f.Add(DictKey(DictID(content)), rec)
	f.Add([]byte{0, 0, 0, 1}, []byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, key, rec []byte) {
		d, err := DecodeDict(key, rec)
		if err == nil && (DictID(d.Content) != d.ID || len(d.Content) > MaxDictBytes) {
			t.Fatalf("accepted a dictionary whose content does not match: %+v", d)
		}
	})
}
