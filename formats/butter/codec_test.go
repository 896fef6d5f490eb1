// Tests of the butter codec: split round trips, metadata, frames from a
// seek, clips, exports, truncation and bad input.

package butter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
)

// framesOf collects the "frame" events of [from, to].
func framesOf(t *testing.T, c formats.Codec, src formats.Source, from, to int64) []formats.Frame {
	t.Helper()
	var out []formats.Frame
	err := c.Frames(context.Background(), src, formats.Ticks(from, to), func(f formats.Frame) error {
		if f.Type == "frame" {
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("frames [%d, %d]: %v", from, to, err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCodecSplitCorpus(t *testing.T) {
	c := New()
	for _, rf := range refFiles(t) {
		t.Run(rf.Set+"."+rf.Compression.String()+".k"+itoa(rf.K), func(t *testing.T) {
			native := readFile(t, rf.Path)
			if !c.Detect(native[:min(len(native), formats.DetectSize)]) {
				t.Fatal("Detect = false")
			}
			rec := formatstest.Split(t, c, native)
			dec, err := Decode(context.Background(), native, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := rec.Metadata
			if m.Ticks != int64(len(dec.Frames)) {
				t.Fatalf("Ticks = %d, want %d", m.Ticks, len(dec.Frames))
			}
			wantChunks := (len(dec.Frames) + rf.K - 1) / rf.K
			if len(rec.ChunkIndex) != wantChunks {
				t.Fatalf("%d chunks, want %d", len(rec.ChunkIndex), wantChunks)
			}
			for i, ch := range rec.ChunkIndex {
				if ch.StartTick != int64(i*rf.K) || ch.Precompressed != (rf.Compression != CompressNone) {
					t.Fatalf("chunk %d: %+v", i, ch)
				}
				if want := dec.Frames[ch.StartTick].RecordedTime.Sub(dec.Frames[0].RecordedTime); ch.Time != want {
					t.Fatalf("chunk %d: Time %v, want %v", i, ch.Time, want)
				}
			}
			if m.Session != dec.Header.SessionID || m.Map != "mpl_arena_a" || len(m.Players) == 0 || m.Start.IsZero() || m.Duration <= 0 || m.TickRate <= 0 {
				t.Fatalf("metadata: %+v", m)
			}
			for _, p := range m.Players {
				if p.Name == "" || p.ID == "" || p.Team == "" {
					t.Fatalf("player %+v", p)
				}
			}
			if _, ok := m.Attrs["client_name"]; !ok || strings.Contains(mustString(t, m), dec.Header.SessionIP) {
				t.Fatalf("attrs %v (the session IP must not be in metadata)", m.Attrs)
			}
			// frames of the whole recording equal a full decode
			src := rec.Source()
			all := framesOf(t, c, src, 0, -1)
			if len(all) != len(dec.Frames) {
				t.Fatalf("Frames gave %d, want %d", len(all), len(dec.Frames))
			}
			for _, i := range []int{0, len(all) / 2, len(all) - 1} {
				if !bytes.Equal(mustJSON(t, all[i].Data), mustJSON(t, FrameData{dec.Frames[i].RecordedTime.Format(TimeLayout), dec.Frames[i]})) {
					t.Fatalf("frame %d differs from a full decode", i)
				}
			}
			// a seek into the last chunk reads only that chunk and, thanks
			// to Resume, decodes bones exactly like a full decode
			last := rec.ChunkIndex[len(rec.ChunkIndex)-1]
			rec.Reads = 0
			got := framesOf(t, c, src, last.StartTick, last.StartTick+1)
			if rec.Reads != 1 || len(got) != min(2, int(last.Ticks)) {
				t.Fatalf("seek read %d chunks and gave %d frames", rec.Reads, len(got))
			}
			if !bytes.Equal(mustJSON(t, got[0].Data.(FrameData).Frame.Bones), mustJSON(t, dec.Frames[last.StartTick].Bones)) {
				t.Fatal("bones after a seek differ from a full decode")
			}
		})
	}
}

func mustString(t *testing.T, v any) string { return string(mustJSON(t, v)) }

func TestCodecClip(t *testing.T) {
	c := New()
	for _, name := range []string{"milk_2020-09-07.none.k30.butter", "milk_2020-09-07.gzip.k30.butter", "milk_2020-09-07.zstd_3.k30.butter", "synthetic_bones.none.k60.butter"} {
		t.Run(name, func(t *testing.T) {
			native := readFile(t, corpusDir(t)+"/reference/butter/"+name)
			rec := formatstest.Split(t, c, native)
			full, err := Decode(context.Background(), native, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			h, _ := ParseFileHeader(native)
			k := int64(h.KeyframeInterval)
			for _, r := range [][2]int64{{0, -1}, {45, 100}, {k, k}, {k + 3, 2*k + 5}, {int64(len(full.Frames)) - 3, -1}} {
				var b bytes.Buffer
				if err := c.Clip(context.Background(), rec.Source(), formats.Ticks(r[0], r[1]), &b); err != nil {
					t.Fatalf("clip %v: %v", r, err)
				}
				if r == [2]int64{0, -1} && !bytes.Equal(b.Bytes(), native) {
					t.Fatal("clip of everything differs from the file")
				}
				clip, err := Decode(context.Background(), b.Bytes(), DecodeOptions{})
				if err != nil || len(clip.Warnings) > 0 {
					t.Fatalf("clip %v does not read back: %v %v", r, err, clip.Warnings)
				}
				start := r[0] / k * k
				end := r[1]
				if end < 0 {
					end = int64(len(full.Frames)) - 1
				}
				if int64(len(clip.Frames)) != end-start+1 {
					t.Fatalf("clip %v: %d frames, want %d", r, len(clip.Frames), end-start+1)
				}
				for i, f := range clip.Frames {
					want := full.Frames[start+int64(i)]
					f.Bones, want.Bones = nil, nil // bones of a mid-file clip decode against a zero base
					if !bytes.Equal(mustJSON(t, f), mustJSON(t, want)) || !f.RecordedTime.Equal(want.RecordedTime) {
						t.Fatalf("clip %v: frame %d differs", r, i)
					}
				}
				formatstest.Split(t, c, b.Bytes())
			}
		})
	}
}

func TestTruncatedFile(t *testing.T) {
	c := New()
	for _, name := range []string{"milk_2020-09-07.none.k300.butter", "milk_2020-09-07.gzip.k300.butter", "milk_2020-09-07.zstd_3.k300.butter"} {
		native := readFile(t, corpusDir(t)+"/reference/butter/"+name)
		full, err := Decode(context.Background(), native, DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cut := native[:len(native)*2/3]
		rec := formatstest.Split(t, c, cut)
		m := rec.Metadata
		if len(m.Warnings) == 0 || m.Ticks < 300 || m.Ticks >= int64(len(full.Frames)) {
			t.Fatalf("%s: truncated split: %d ticks, warnings %v", name, m.Ticks, m.Warnings)
		}
		got := framesOf(t, c, rec.Source(), 0, -1)
		if int64(len(got)) != m.Ticks {
			t.Fatalf("%s: %d frames, metadata says %d", name, len(got), m.Ticks)
		}
		for i, f := range got {
			if !bytes.Equal(mustJSON(t, f.Data.(FrameData).Frame), mustJSON(t, full.Frames[i])) {
				t.Fatalf("%s: frame %d of the truncated file differs", name, i)
			}
		}
		dec, err := Decode(context.Background(), cut, DecodeOptions{})
		if err != nil || len(dec.Frames) != len(got) || len(dec.Warnings) == 0 {
			t.Fatalf("%s: Decode of the truncated file: %v, %d frames, %v", name, err, len(dec.Frames), dec.Warnings)
		}
		t.Logf("%s: %v", name, m.Warnings)
	}
}

func TestBadInput(t *testing.T) {
	c := New()
	for _, name := range []string{"milk_2020-09-07.none.k30.butter", "milk_2020-09-07.gzip.k30.butter"} {
		native := readFile(t, corpusDir(t)+"/reference/butter/"+name)
		native = native[:40000]
		n := formatstest.CheckBadInput(t, c, native, 397)
		t.Logf("%s: %d variants errored", name, n)
	}
	// errors carry offsets
	native := readFile(t, corpusDir(t)+"/reference/butter/milk_2020-09-07.none.k30.butter")
	bad := bytes.Clone(native)
	h, _ := ParseFileHeader(bad)
	bad[h.DataStart()] = 0x00 // break the first frame marker
	_, err := formatstest.TrySplit(c, bad)
	var fe *formats.Error
	if !errors.As(err, &fe) || fe.Offset != h.DataStart() {
		t.Fatalf("error %v, want a *formats.Error at offset %d", err, h.DataStart())
	}
	t.Log(err)
	_, err = formatstest.TrySplit(c, native[:10])
	if !errors.As(err, &fe) {
		t.Fatalf("short header: %v", err)
	}
	t.Log(err)
}

func TestMetadataEvents(t *testing.T) {
	rec := formatstest.Split(t, New(), readFile(t, corpusDir(t)+"/reference/butter/example_2021-11-20.gzip.k300.butter"))
	var got []string
	for _, e := range rec.Metadata.Events {
		got = append(got, itoa(int(e.Tick))+" "+e.Kind+" "+e.Player+" "+e.PlayerID+" "+e.Text)
	}
	want := []string{
		"400 join late_joiner 6996211794863665 spectator",
		"520 team late_joiner 6996211794863665 orange",
		"690 goal Loveridge- 1583780395029509 blue INSIDE SHOT, 2 points, 23.0 m/s",
		"1000 drop Cruisen 2455552844517585 ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(rec.Metadata.Players); n != 11 {
		t.Fatalf("%d players", n)
	}
}

// A first frame stamped near the Unix epoch (a .milk conversion) leaves
// the start unknown; a real one is kept.
func TestStartNeedsARealTimestamp(t *testing.T) {
	for _, tt := range []struct {
		first time.Time
		known bool
	}{
		{time.Unix(0, 0), false},
		{time.Unix(2, 0), false},
		{time.Date(2021, 11, 20, 1, 2, 3, 0, time.UTC), true},
	} {
		mb := newMetaBuilder(&formats.Metadata{})
		mb.add(0, &Frame{RecordedTime: tt.first})
		mb.add(1, &Frame{RecordedTime: tt.first.Add(time.Second)})
		mb.finish()
		if got := !mb.meta.Start.IsZero(); got != tt.known {
			t.Errorf("first frame at %s: start known = %v, want %v", tt.first, got, tt.known)
		}
	}
}
