package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/query"
)

// TestAdvice: the library's errors name no command; the command line adds
// the one that deals with each, however deeply the error is wrapped.
func TestAdvice(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{replay.ErrNoArchive, "archivectl init"},
		{replay.ErrLocked, "--wait"},
		{archive.ErrNoRemote, "archivectl remote set"},
		{replay.ErrIndexSync, "archivectl reindex"},
		{query.ErrStale, "archivectl reindex"},
		{query.ErrOldLayout, "archivectl reindex"},
	} {
		if strings.Contains(c.err.Error(), "archivectl") || strings.Contains(c.err.Error(), "--") {
			t.Errorf("library error %q names a command", c.err)
		}
		if got := advice(fmt.Errorf("op: %w", c.err)); !strings.Contains(got, c.want) {
			t.Errorf("advice(%q) = %q, want it to name %q", c.err, got, c.want)
		}
	}
	if got := advice(fmt.Errorf("other")); got != "" {
		t.Errorf("advice for an unknown error: %q", got)
	}
}
