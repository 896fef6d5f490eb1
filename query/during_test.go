// Tests for at: and during: around one minute: recordings running through
// it, ended before it, starting after it, inside it, and of zero length.

package query

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestSearchRunningAt(t *testing.T) {
	// t0 is 2023-11-27T21:48:00Z; the recordings around it:
	t0 := time.Date(2023, 11, 27, 21, 48, 0, 0, time.UTC)
	const (
		through = "10000000-0000-0000-0000-000000000001" // 21:00..22:00, runs through t0
		ended   = "10000000-0000-0000-0000-000000000002" // 21:00..21:47:59, ended before the minute
		later   = "10000000-0000-0000-0000-000000000003" // from 21:49, starts after the minute
		inMin   = "10000000-0000-0000-0000-000000000004" // 21:48:30..21:48:40, inside the minute
		endsAt  = "10000000-0000-0000-0000-000000000005" // 21:40..21:48:10 exactly
		instant = "10000000-0000-0000-0000-000000000006" // zero length at 21:48:20
		noStart = "10000000-0000-0000-0000-000000000007" // start unknown: never matches
	)
	docs := []RecordingDoc{
		{ID: through, Format: "teehistorian", Start: t0.Add(-48 * time.Minute), Duration: time.Hour},
		{ID: ended, Format: "teehistorian", Start: t0.Add(-48 * time.Minute), Duration: 47*time.Minute + 59*time.Second},
		{ID: later, Format: "teehistorian", Start: t0.Add(time.Minute), Duration: time.Hour},
		{ID: inMin, Format: "teehistorian", Start: t0.Add(30 * time.Second), Duration: 10 * time.Second},
		{ID: endsAt, Format: "teehistorian", Start: t0.Add(-8 * time.Minute), Duration: 8*time.Minute + 10*time.Second},
		{ID: instant, Format: "teehistorian", Start: t0.Add(20 * time.Second)},
		{ID: noStart, Format: "teehistorian", Duration: time.Hour},
	}
	ix, err := Open(t.TempDir() + "/ix")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Apply(context.Background(), 1, docs, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q    string
		want []string // newest first
	}{
		// A minute means the whole minute: every recording running in it.
		{"at:2023-11-27T21:48", []string{inMin, instant, endsAt, through}},
		{"at:2023-11-27T22:48+01:00", []string{inMin, instant, endsAt, through}},
		// A second means that second; endsAt runs until 21:48:09.999999999.
		{"at:2023-11-27T21:48:09Z", []string{endsAt, through}},
		{"at:2023-11-27T21:48:10Z", []string{through}}, // start <= t < start+duration
		{"at:2023-11-27T21:48:20", []string{instant, through}},
		{"at:2023-11-27T21:48:20.5Z", []string{through}},
		{"at:2023-11-27T21:47:59Z", []string{endsAt, through}},
		{"at:2023-11-27T21:47:58.999Z", []string{endsAt, ended, through}},
		{"at:2023-11-27T21:49:00Z", []string{later, through}},
		{"at:2023-11-27", []string{later, inMin, instant, endsAt, ended, through}},
		{"at:2023-11-28", nil},
		{"-at:2023-11-27T21:48", []string{later, ended, noStart}},
		// during: overlaps [FROM, TO); TO is exclusive, as before:.
		{"during:2023-11-27T21:48..2023-11-27T21:49", []string{inMin, instant, endsAt, through}},
		{"during:2023-11-27T21:48:30Z..2023-11-27T21:49:00Z", []string{inMin, through}},
		{"during:2023-11-27T21:48:15Z..", []string{later, inMin, instant, through}},
		{"during:..2023-11-27T21:40", []string{ended, through}},
		{"during:..2023-11-27T21:40:00.000000001Z", []string{endsAt, ended, through}},
		// Compare: after: and before: look at the start only.
		{"after:2023-11-27T21:48:00Z before:2023-11-27T21:49:00Z", []string{inMin, instant}},
		{"at:2023-11-27T21:48 format:teehistorian longer:30m", []string{through}},
	}
	for _, tt := range tests {
		res, err := ix.Search(context.Background(), tt.q, 20)
		if err != nil {
			t.Errorf("%q: %v", tt.q, err)
			continue
		}
		got, _ := ids(res)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.q, got, tt.want)
		}
	}
}
