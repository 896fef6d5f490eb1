// Tests of hostile input: lying lengths in small files cost no
// more memory than the file.

package hcrp_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/hcrp"
	"github.com/replayarchive/replay/internal/gen/hcrpgen"
	"github.com/replayarchive/replay/internal/memtest"
)

// splitPeak splits b and returns the peak heap and the error.
func splitPeak(b []byte) (uint64, error) {
	var err error
	peak := memtest.Peak(func() { _, err = formatstest.TrySplit(hcrp.Codec{}, b) })
	return peak, err
}

func TestLyingPreambleLength(t *testing.T) {
	// a header declaring 16 MiB of metadata and 64 MiB of index, then
	// 100 bytes
	h := hcrp.Header{WorldID: hcrpgen.World, MetadataLen: hcrp.MaxMetadataLen, IndexLen: hcrp.MaxIndexLen, Chunks: 1}
	b, err := hcrp.AppendHeader(nil, &h)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, make([]byte, 100)...)
	peak, err := splitPeak(b)
	if err == nil || !strings.Contains(err.Error(), "metadata and index") {
		t.Fatalf("err = %v", err)
	}
	if peak > 4<<20 {
		t.Fatalf("an 80 MiB claim over 100 bytes held %d MiB", peak>>20)
	}
}

func TestLyingUncompressedLength(t *testing.T) {
	// an index entry claiming 16 MiB from 10 compressed bytes: refused
	// by the index check, before a 16 MiB buffer is allocated
	comp := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00}
	var buf bytes.Buffer
	entries := []hcrp.IndexEntry{{Ticks: 1, CompressedLen: int32(len(comp)), UncompressedLen: hcrp.MaxChunkLen}}
	if err := hcrp.WriteCompacted(&buf, hcrp.Header{WorldID: hcrpgen.World}, []byte{0x0a, 0}, entries,
		func(int) ([]byte, error) { return comp, nil }); err != nil {
		t.Fatal(err)
	}
	peak, err := splitPeak(buf.Bytes())
	if err == nil || !strings.Contains(err.Error(), "compressed bytes of zstd can hold") {
		t.Fatalf("err = %v", err)
	}
	if peak > 4<<20 {
		t.Fatalf("a 16 MiB claim over 10 bytes held %d MiB", peak>>20)
	}
}

func TestLyingChunkLength(t *testing.T) {
	// a real file cut after its preamble and 100 bytes: the index's
	// chunk lengths are read only as far as the bytes go
	good, err := hcrpgen.Generate(hcrpgen.Config{Seed: 9, Ticks: 250, Players: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := hcrp.ParseHeader(good)
	cut := good[:h.PreambleLen()+100]
	peak, err := splitPeak(cut)
	if err == nil || !strings.Contains(err.Error(), "chunk 0") {
		t.Fatalf("err = %v", err)
	}
	if peak > 4<<20 {
		t.Fatalf("held %d MiB", peak>>20)
	}
}
