// Tests over files made by internal/gen/teehistoriangen: clips, Frames
// reading one chunk, the generator's determinism, the events limit,
// start-info names and secrets that never leak. They are external tests
// because the generator imports this package.

package teehistorian_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/formats/teehistorian"
	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

func TestClipGenerated(t *testing.T) {
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Players: 12, Seed: 3, Messages: true})
	codec := &teehistorian.Codec{ChunkSize: 16 << 10}
	for _, r := range [][2]int64{{0, 100}, {1, 1}, {2, 2}, {777, 2500}, {3000, -1}, {5999, 5999}} {
		teehistorian.CheckClip(t, codec, file, r[0], r[1])
	}
	if _, err := (func() (int, error) {
		rec := formatstest.Split(t, codec, file)
		return 0, codec.Clip(context.Background(), rec.Source(), formats.Ticks(1e6, -1), io.Discard)
	})(); err == nil {
		t.Errorf("clip after the end: expected an error")
	}
}

// oneHour is generated once per test binary.
var oneHour = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	err := teehistoriangen.Generate(&buf, teehistoriangen.Options{Duration: time.Hour, Players: 16, Seed: 1})
	return buf.Bytes(), err
})

// TestFramesReadsOneChunk shows on ten generated minutes with 32 KiB chunks
// that a range inside one chunk reads only that chunk;
// BenchmarkFramesOneChunk checks the same on the one-hour file with the
// default chunks.
func TestFramesReadsOneChunk(t *testing.T) {
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Minute, Players: 16, Seed: 1})
	chunkSize := 32 << 10
	codec := &teehistorian.Codec{ChunkSize: chunkSize}
	rec := formatstest.Split(t, codec, file)
	if len(rec.ChunkIndex) < 5 {
		t.Fatalf("only %d chunks", len(rec.ChunkIndex))
	}
	maxResume := 0
	for _, c := range rec.ChunkIndex {
		maxResume = max(maxResume, len(c.Resume))
	}
	t.Logf("%d chunks of about %d bytes; largest resume state %d bytes", len(rec.ChunkIndex), chunkSize, maxResume)
	for k, i := range []int{1, len(rec.ChunkIndex) / 2, len(rec.ChunkIndex) - 2, 3} {
		c := rec.ChunkIndex[i]
		if c.Length < int64(chunkSize) || c.Length > int64(2*chunkSize) {
			t.Errorf("chunk %d is %d bytes, target %d", i, c.Length, chunkSize)
		}
		from, to := c.StartTick+c.Ticks/4, c.StartTick+c.Ticks/2
		if k == 3 {
			// The whole chunk, up to its last tick.
			from, to = c.StartTick, c.EndTick()-1
		}
		rec.Reads = 0
		var n int
		var positions int
		err := codec.Frames(context.Background(), rec.Source(), formats.Ticks(from, to), func(f formats.Frame) error {
			if f.Tick < from || f.Tick > to {
				t.Fatalf("frame at tick %d outside %d..%d", f.Tick, from, to)
			}
			if p, ok := f.Data.(teehistorian.PlayerFrame); ok && f.Type == "player_diff" && (p.X != 0 || p.Y != 0) {
				positions++
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Reads != 1 {
			t.Errorf("Frames %d..%d read %d chunks, want 1", from, to, rec.Reads)
		}
		if n == 0 || positions == 0 {
			t.Errorf("Frames %d..%d gave %d frames (%d positions)", from, to, n, positions)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	opt := teehistoriangen.Options{Duration: 30 * time.Second, Players: 8, Seed: 42, Messages: true}
	a, b := teehistoriangen.Must(t, opt), teehistoriangen.Must(t, opt)
	if !bytes.Equal(a, b) {
		t.Fatal("same options gave different bytes")
	}
	opt.Seed = 43
	if bytes.Equal(a, teehistoriangen.Must(t, opt)) {
		t.Fatal("different seeds gave the same bytes")
	}
	opt.NoFinish = true
	rec := formatstest.Split(t, teehistorian.New(), teehistoriangen.Must(t, opt))
	if rec.Metadata.Attrs["finished"] != "false" {
		t.Errorf("NoFinish file is finished")
	}
	m := formatstest.Split(t, teehistorian.New(), teehistoriangen.Must(t, teehistoriangen.Options{Duration: 10 * time.Minute, Seed: 5})).Metadata
	kinds := map[string]int{}
	for _, e := range m.Events {
		kinds[e.Kind]++
	}
	for _, k := range []string{formats.EventJoin, formats.EventDrop, formats.EventCommand, formats.EventTeam, formats.EventFinish, formats.EventLogin} {
		if kinds[k] == 0 {
			t.Errorf("10 generated minutes have no %s event (%v)", k, kinds)
		}
	}
	if len(m.Players) < 10 || m.Ticks != 30001 {
		t.Errorf("generated: %d players, %d ticks", len(m.Players), m.Ticks)
	}
}

func TestMaxEvents(t *testing.T) {
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Seed: 11})
	all := formatstest.Split(t, teehistorian.New(), file).Metadata
	m := formatstest.Split(t, &teehistorian.Codec{MaxEvents: 5}, file).Metadata
	if len(all.Events) <= 5 || len(m.Events) != 5 || len(m.Warnings) != 1 ||
		m.Warnings[0] != fmt.Sprintf("%d events after the first 5 left out of the metadata", len(all.Events)-5) {
		t.Errorf("%d events of %d, warnings %q", len(m.Events), len(all.Events), m.Warnings)
	}
}

// TestSecretsRedacted proves that the players' reconnect (timeout) codes in
// the corpus appear nowhere in the metadata or the frames.
func TestSecretsRedacted(t *testing.T) {
	files := teehistorian.CorpusFiles(t)
	var secrets []string
	for _, file := range files {
		rd, err := teehistorian.NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		for {
			it, err := rd.Next()
			if err != nil {
				break
			}
			if it.Type == teehistorian.ItemConsoleCommand && string(it.Cmd) == "timeout" {
				secrets = append(secrets, string(it.Args[0]))
			}
		}
	}
	if !slices.Contains(secrets, "tjfekX6ScC8A3NkN") {
		t.Fatalf("expected the Tutorial timeout code among %q", secrets)
	}
	gen := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Players: 16, Seed: 7})
	var genSecrets int
	rd, _ := teehistorian.NewReader(bytes.NewReader(gen))
	for {
		it, err := rd.Next()
		if err != nil {
			break
		}
		if _, secret := teehistorian.SecretArgs(it.Cmd); it.Type == teehistorian.ItemConsoleCommand && secret && len(it.Args) > 0 {
			for _, a := range it.Args[len(it.Args)-1:] {
				secrets = append(secrets, string(a))
				genSecrets++
			}
		}
	}
	if genSecrets < 5 {
		t.Fatalf("generated file has only %d secrets", genSecrets)
	}
	files["generated"] = gen
	for name, file := range files {
		rec := formatstest.Split(t, teehistorian.New(), file)
		mj, _ := json.Marshal(rec.Metadata)
		var fj bytes.Buffer
		enc := json.NewEncoder(&fj)
		if err := teehistorian.New().Frames(context.Background(), rec.Source(), formats.All(), func(f formats.Frame) error { return enc.Encode(f) }); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(mj, []byte(s)) {
				t.Errorf("%s: secret %q in metadata", name, s)
			}
			if bytes.Contains(fj.Bytes(), []byte(s)) {
				t.Errorf("%s: secret %q in frames", name, s)
			}
		}
		if strings.Contains(string(mj), "timeout") && !strings.Contains(string(mj), "timeout "+teehistorian.Redacted) {
			t.Errorf("%s: timeout command without redaction", name)
		}
	}
}

// TestNamesByVersion: before version_minor 8 names come from start-info
// messages; from 8 on only PLAYER_NAME (the server-side name) counts.
func TestNamesByVersion(t *testing.T) {
	for _, tc := range []struct {
		minor string
		want  string
	}{{"6", "[client-name]"}, {"22", "[(1)server-name]"}} {
		h := teehistorian.SampleHeader()
		h.VersionMinor = tc.minor
		hj, _ := h.MarshalJSON()
		var buf bytes.Buffer
		rec, _ := teehistorian.NewRecorder(&buf, hj)
		rec.PlayerJoin(0, false)
		rec.Message(0, teehistoriangen.AppendStartInfo(nil, false, "client-name", ""))
		if tc.minor != "6" {
			rec.PlayerName(0, "(1)server-name")
		}
		rec.Finish()
		m := formatstest.Split(t, teehistorian.New(), buf.Bytes()).Metadata
		if got := fmt.Sprint(teehistorian.PlayerNames(m)); got != tc.want {
			t.Errorf("minor %s: players %s, want %s", tc.minor, got, tc.want)
		}
	}
}

// TestRedactGenerated redacts a generated file with many players: none of
// its timeout codes or passwords survive, and the file keeps its ticks.
func TestRedactGenerated(t *testing.T) {
	file := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 2 * time.Minute, Players: 16, Seed: 7})
	rec := formatstest.Split(t, teehistorian.New(), file)
	var secrets []string
	rd, _ := teehistorian.NewReader(bytes.NewReader(file))
	for {
		it, err := rd.Next()
		if err != nil {
			break
		}
		// Timeout codes and passwords (login and register also name the
		// player, which is no secret).
		if it.Type == teehistorian.ItemConsoleCommand {
			for _, a := range it.Args {
				if string(it.Cmd) == "timeout" || bytes.HasPrefix(a, []byte("pw-")) {
					secrets = append(secrets, string(a))
				}
			}
		}
	}
	if len(secrets) < 10 {
		t.Fatalf("only %d secrets", len(secrets))
	}
	red := teehistorian.RedactRecording(t, rec, 0, -1)
	if l := teehistorian.Leaks(red, secrets); len(l) > 0 {
		t.Fatalf("redacted file leaks %d secrets, e.g. %q", len(l), l[0])
	}
	teehistorian.CheckRedactedWhole(t, file, red, rec.Metadata, formatstest.Split(t, teehistorian.New(), red).Metadata)
}

// TestGeneratedColumns splits the records of a generated game into columns
// and joins them: the same bytes, all explained by the syntax (no tail).
func TestGeneratedColumns(t *testing.T) {
	game := teehistoriangen.Must(t, teehistoriangen.Options{Duration: 20 * time.Second, Seed: 5})
	body := game[16+bytes.IndexByte(game[16:], 0)+1:]
	c := teehistorian.New()
	cols := c.SplitColumns(body, nil)
	got, err := c.JoinColumns(nil, cols)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("round trip changed the bytes: %d in, %d out", len(body), len(got))
	}
	if n := len(cols[teehistorian.ColumnTail]); n != 0 {
		t.Errorf("tail %d bytes, want 0", n)
	}
}

// TestGeneratedParseCommon: generated games, with client ids above 63 and
// idle players, read the same through the common records' path.
func TestGeneratedParseCommon(t *testing.T) {
	for _, opt := range []teehistoriangen.Options{
		{Duration: 20 * time.Second, Seed: 5, Messages: true},
		{Duration: 20 * time.Second, Seed: 6, Players: 100, Idle: 0.5},
	} {
		if n := teehistorian.CheckParseCommon(t, teehistoriangen.Must(t, opt)); n < 1000 {
			t.Errorf("%+v: %d records went through parseCommon, want at least 1000", opt, n)
		}
	}
}
