package archive

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchManifest is a manifest of n 64 KiB chunks, as a teehistorian file
// of n × 64 KiB is stored (235 for one hour, 15,628 for 1 GB).
func benchManifest(n int) *Manifest {
	m := &Manifest{Format: "teehistorian", Shard: "2026-01", Chunks: make([]ChunkEntry, n)}
	off := int64(3100)
	for i := range m.Chunks {
		m.Chunks[i] = ChunkEntry{
			StartTick: int64(i) * 770, Ticks: 770, Time: time.Duration(i) * 770 * 20 * time.Millisecond,
			Offset: off, Length: 65536 - int64(i%97), Stored: 19000 + int64(i%1000), CRC: uint32(i) * 2654435761,
		}
		off += m.Chunks[i].Length
	}
	return m
}

// BenchmarkOpenManifest decodes a stored manifest as Archive.Open does
// (binary table, lazily into the codec's view) against the JSON chunk
// list manifests had before (the same-run baseline), at one hour's and at
// 1 GB's chunk count:
//
//	go test -run '^$' -bench OpenManifest -benchmem ./archive/
func BenchmarkOpenManifest(b *testing.B) {
	for _, n := range []int{235, 15628} {
		m := benchManifest(n)
		bin, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		type oldManifest manifestFields // no methods: the old JSON list
		list, err := json.Marshal((*oldManifest)(m))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("binary/chunks=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(bin)))
			for b.Loop() {
				_, table, err := decodeManifestLazy(bin)
				if err != nil {
					b.Fatal(err)
				}
				k := 0
				if err := eachChunkEntry(table, func(int) {}, func(*ChunkEntry) { k++ }); err != nil || k != n {
					b.Fatal(err, k)
				}
			}
		})
		b.Run(fmt.Sprintf("jsonlist/chunks=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(list)))
			for b.Loop() {
				var back Manifest
				if err := json.Unmarshal(list, &back); err != nil || len(back.Chunks) != n {
					b.Fatal(err)
				}
			}
		})
	}
}
