// Benchmarks: decoding and encoding speed in frames per second, and the
// size of .butter against the same session as .echoreplay.

package butter

import (
	"archive/zip"
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

const benchSet = "example_2021-11-20"

func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"none.k300", "gzip.k300", "zstd_3.k300"} {
		b.Run(name, func(b *testing.B) {
			native := readFile(b, filepath.Join(corpusDir(b), "reference", "butter", benchSet+"."+name+".butter"))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for i := 0; i < b.N; i++ {
				_, _, err := ReadFrames(ctx, native, DecodeOptions{}, func(int, *Frame) error { n++; return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	frames := inputFrames(b, benchSet)
	for _, c := range []Compression{CompressNone, CompressGzip, CompressZstd3} {
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w, _ := NewWriter(WriterOptions{KeyframeInterval: 300, Compression: c})
				for _, f := range frames {
					if err := w.Add(f); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Bytes(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(frames))/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkParseEchoReplay is the baseline: parsing the same session from
// .echoreplay text.
func BenchmarkParseEchoReplay(b *testing.B) {
	text := readZst(b, filepath.Join(corpusDir(b), "reference", "input", benchSet+".echoreplay.zst"))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		fs, err := ReadEchoReplay(text)
		if err != nil {
			b.Fatal(err)
		}
		n += len(fs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkSizes reports the size of one session as .echoreplay (plain and
// zipped) and as .butter (none, gzip, zstd_3, zstd_22 at Spark's keyframe
// interval of 300), per frame.
func BenchmarkSizes(b *testing.B) {
	for _, set := range []string{"example_2021-11-20", "milk_2020-09-07"} {
		b.Run(set, func(b *testing.B) {
			text := readZst(b, filepath.Join(corpusDir(b), "reference", "input", set+".echoreplay.zst"))
			frames := inputFrames(b, set)
			sizes := map[string]int{"echoreplay": len(text)}
			for i := 0; i < b.N; i++ {
				var z bytes.Buffer
				zw := zip.NewWriter(&z)
				w, _ := zw.Create("rec.echoreplay")
				w.Write(text)
				zw.Close()
				sizes["echoreplay.zip"] = z.Len()
				for _, c := range []Compression{CompressNone, CompressGzip, CompressZstd3, CompressZstd22} {
					bw, _ := NewWriter(WriterOptions{KeyframeInterval: 300, Compression: c})
					for _, f := range frames {
						bw.Add(f)
					}
					out, _ := bw.Bytes()
					sizes["butter."+c.String()] = len(out)
				}
			}
			for k, v := range sizes {
				b.ReportMetric(float64(v)/float64(len(frames)), k+"-B/frame")
			}
		})
	}
}
