package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/formats/formatstest"
	"github.com/replayarchive/replay/internal/s3test"
	bolt "go.etcd.io/bbolt"
)

// testClock is an Options.Now that a test moves forward.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := new(testClock)
	c.ns.Store(t.UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
func (c *testClock) Set(t time.Time)         { c.ns.Store(t.UnixNano()) }

func TestManifestAgeFrom(t *testing.T) {
	in := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name            string
		start, ingested time.Time
		want            time.Time
	}{
		{"start before ingest", in.Add(-48 * time.Hour), in, in.Add(-48 * time.Hour)},
		{"no start (.milk, header-only SC2)", time.Time{}, in, in},
		{"start in the future", in.AddDate(3, 0, 0), in, in},
		{"start a second after ingest", in.Add(time.Second), in, in},
		{"no ingest time", in.Add(-time.Hour), time.Time{}, in.Add(-time.Hour)},
		{"no time at all", time.Time{}, time.Time{}, time.Time{}},
	} {
		m := &Manifest{Ingested: tc.ingested}
		m.Meta.Start = tc.start
		if got := m.AgeFrom(); !got.Equal(tc.want) {
			t.Errorf("%s: AgeFrom = %v, want %v", tc.name, got, tc.want)
		}
	}
	if age := (&Manifest{}).Age(in); age != 0 {
		t.Errorf("a manifest with no time is %v old, want 0 (never pruned for an unknown age)", age)
	}
}

// TestUploadWithinDelayOfIngest: with the default configuration every
// sealed recording reaches the bucket DefaultUploadAfter after its ingest
// at the latest, one without a start time and one whose start lies in the
// future included; a live one once sealed; and retention ages the same
// recordings from their ingest.
func TestUploadWithinDelayOfIngest(t *testing.T) {
	if DefaultUploadAfter > 10*time.Minute {
		t.Fatalf("DefaultUploadAfter is %v: a sealed recording must leave its one disk within minutes", DefaultUploadAfter)
	}
	srv := s3test.Start(t)
	clock := newTestClock(tierNow)
	a := openTest(t, "", Options{Remote: srv.NewStore(t), Now: clock.Now})
	noStart := ingest(t, a, formatstest.LinesFile("nostart", 50), func(m *formats.Metadata) { m.Start = time.Time{} })
	future := ingest(t, a, formatstest.LinesFile("future", 50), func(m *formats.Metadata) { m.Start = tierNow.AddDate(1, 0, 0) })
	old := ingest(t, a, formatstest.LinesFile("old", 50), func(m *formats.Metadata) { m.Start = tierNow.AddDate(0, -2, 0) })
	liveID := uuid.MustParse("0d2f4c1e-8a6b-4c3d-9e7f-5a1b2c3d4e5f")
	liveGrow(t, a, liveID, []byte("ab"), 1)

	upload := func() int {
		t.Helper()
		rep, err := a.Upload(t.Context(), UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Recordings
	}
	where := func(id uuid.UUID) string {
		t.Helper()
		m, err := a.Manifest(id)
		if err != nil {
			t.Fatal(err)
		}
		return a.Location(m)
	}
	// The one that started two months ago is past the delay at once.
	if n := upload(); n != 1 || where(old.ID) != LocationRemote {
		t.Fatalf("first upload: %d recordings, old one %s; want 1, remote", n, where(old.ID))
	}
	clock.Advance(DefaultUploadAfter - time.Second)
	if n := upload(); n != 0 {
		t.Fatalf("a second before the delay: %d uploaded, want 0", n)
	}
	clock.Advance(time.Second)
	if n := upload(); n != 2 {
		t.Fatalf("at the delay: %d uploaded, want 2 (no start, future start)", n)
	}
	for _, id := range []uuid.UUID{noStart.ID, future.ID} {
		if w := where(id); w != LocationRemote {
			t.Errorf("%s is %s after the delay, want remote", id, w)
		}
	}
	if w := where(liveID); w != LocationLocal {
		t.Errorf("live recording is %s, want local until sealed", w)
	}
	// Sealed now, long after its first bytes: the next pass takes it.
	clock.Advance(20 * time.Minute)
	live, err := a.LiveOf(liveID)
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.NewGrowth("lines", "live.lines", live)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Chunk(formats.Chunk{StartTick: 0, Ticks: 1}, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CommitGrow(context.Background(), g, &formats.TailResult{Meta: &formats.Metadata{ID: liveID}, End: 4}, true); err != nil {
		t.Fatal(err)
	}
	if n := upload(); n != 1 || where(liveID) != LocationRemote {
		t.Fatalf("after the seal: %d uploaded, live one %s; want 1, remote", n, where(liveID))
	}

	// A whole copy in the chunk cache: both.
	if w := where(noStart.ID); w != LocationRemote {
		t.Errorf("nothing cached yet: %s, want remote", w)
	}
	r, err := a.Open(noStart.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Chunks() {
		if _, _, err := r.ReadChunk(t.Context(), i); err != nil {
			t.Fatal(err)
		}
	}
	if w := where(noStart.ID); w != LocationBoth {
		t.Errorf("every chunk cached: %s, want both", w)
	}

	// Retention: --older-than 1h reaches the recordings without a usable
	// start an hour after their ingest.
	ingested := tierNow
	plan := func() map[uuid.UUID]bool {
		t.Helper()
		p, err := a.Plan(t.Context(), Policy{MaxAge: time.Hour}, PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[uuid.UUID]bool{}
		for _, c := range p.Remove {
			out[c.ID] = true
			if c.ID == future.ID && !c.Start.Equal(ingested) {
				t.Errorf("the future one's plan start is %v, want its ingest %v", c.Start, ingested)
			}
		}
		return out
	}
	clock.Set(ingested.Add(59 * time.Minute))
	if p := plan(); !p[old.ID] || p[noStart.ID] || p[future.ID] {
		t.Errorf("59 minutes after ingest the plan removes %v, want only the old one %s", p, old.ID)
	}
	clock.Set(ingested.Add(61 * time.Minute))
	if p := plan(); !p[old.ID] || !p[noStart.ID] || !p[future.ID] {
		t.Errorf("61 minutes after ingest the plan removes %v, want the old, start-less and future ones", p)
	}
}

// TestUploadAfterZeroIsZero: a stored --upload-after 0s uploads every
// sealed recording at once (it used to mean the 30-day default), an
// explicit value is kept, and a configuration stored without one gets
// today's default.
func TestUploadAfterZeroIsZero(t *testing.T) {
	srv := s3test.Start(t)
	clock := newTestClock(tierNow)
	a := openTest(t, "", Options{Now: clock.Now})
	if err := a.SetRemote(t.Context(), RemoteConfig{URL: srv.URL(), S3: srv.Options(), UploadAfter: new(time.Duration(0))}); err != nil {
		t.Fatal(err)
	}
	fresh := ingest(t, a, formatstest.LinesFile("fresh", 50), func(m *formats.Metadata) { m.Start = tierNow })
	rep, err := a.Upload(t.Context(), UploadOptions{})
	if err != nil || rep.Recordings != 1 {
		t.Fatalf("upload with --upload-after 0s: %+v, %v; want the fresh recording at once", rep, err)
	}
	if m, _ := a.Manifest(fresh.ID); m.Remote == "" {
		t.Error("fresh recording not uploaded")
	}
	// AtOnce does the same for one upload, whatever is stored.
	stored := func(raw string) *RemoteConfig {
		t.Helper()
		var cfg RemoteConfig
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.URL, cfg.S3 = srv.URL(), srv.Options()
		v, _ := json.Marshal(cfg)
		if err := a.catalog.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSettings).Put(settingRemote, v) }); err != nil {
			t.Fatal(err)
		}
		got, err := a.RemoteConfig()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if d := stored(`{"upload_after": 2592000000000000}`).UploadDelay(); d != 30*24*time.Hour {
		t.Errorf("a stored 30d is read as %v, want it kept", d)
	}
	if d := stored(`{}`).UploadDelay(); d != DefaultUploadAfter {
		t.Errorf("a configuration without upload_after is read as %v, want the default %v", d, DefaultUploadAfter)
	}
	if d := stored(`{"upload_after": 0}`).UploadDelay(); d != 0 {
		t.Errorf("a stored 0 is read as %v, want 0", d)
	}

	b := openTest(t, "", Options{Remote: srv.NewStore(t), Now: clock.Now})
	young := ingest(t, b, formatstest.LinesFile("young", 50), func(m *formats.Metadata) { m.Start = tierNow })
	if rep, err := b.Upload(t.Context(), UploadOptions{AtOnce: true}); err != nil || rep.Recordings != 1 {
		t.Fatalf("upload AtOnce: %+v, %v", rep, err)
	}
	if m, _ := b.Manifest(young.ID); m.Remote == "" {
		t.Error("AtOnce left the young recording local")
	}
}

// TestReadingNodeWithinDelay: a recording ingested on the writing node is
// served by a reading node DefaultUploadAfter (plus a pass) after its
// ingest, not 30 days after its start.
func TestReadingNodeWithinDelay(t *testing.T) {
	if DefaultUploadAfter > 10*time.Minute {
		t.Fatalf("DefaultUploadAfter is %v: a sealed recording must leave its one disk within minutes", DefaultUploadAfter)
	}
	srv := s3test.Start(t)
	ro := srv.Options()
	ro.ReadOnly = true
	clock := newTestClock(tierNow)
	url := srv.URL()
	one := openTest(t, "", Options{Now: clock.Now})
	if err := one.SetRemote(t.Context(), RemoteConfig{URL: url, S3: srv.Options()}); err != nil {
		t.Fatal(err)
	}
	two := openTest(t, "", Options{Now: clock.Now})
	if err := two.SetRemote(t.Context(), RemoteConfig{URL: url, S3: ro}); err != nil {
		t.Fatal(err)
	}
	native := formatstest.LinesFile("game", 400)
	res := ingest(t, one, native, func(m *formats.Metadata) { m.Start = tierNow.Add(-10 * time.Minute) })
	clock.Advance(DefaultUploadAfter)
	if rep, err := one.Upload(t.Context(), UploadOptions{}); err != nil || rep.Recordings != 1 {
		t.Fatalf("writer's pass: %+v, %v", rep, err)
	}
	if rep, err := two.CatchUp(t.Context()); err != nil || rep.Added != 1 {
		t.Fatalf("reader's pass: %+v, %v", rep, err)
	}
	if got := export(t, two, res.ID); !bytes.Equal(got, native) {
		t.Fatal("the reading node's export differs")
	}
	m, err := two.Manifest(res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w := two.Location(m); w != LocationRemote {
		t.Errorf("on the reading node the recording is %s, want remote", w)
	}
}
