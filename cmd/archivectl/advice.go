package main

import (
	"errors"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/query"
)

// advice returns what the command line adds to an error it reports: the
// command or flag that deals with it. The library's errors say only what
// is wrong, since a program that embeds it has no archivectl to run.
func advice(err error) string {
	switch {
	case errors.Is(err, replay.ErrNoArchive):
		return " (create one with 'archivectl init' or the first ingest)"
	case errors.Is(err, replay.ErrLocked):
		return "; wait with --wait DURATION, or use the server it runs"
	case errors.Is(err, archive.ErrNoRemote):
		return " (archivectl remote set s3://BUCKET/PREFIX --endpoint URL)"
	case errors.Is(err, replay.ErrIndexSync):
		return " (run 'archivectl reindex')"
	case errors.Is(err, query.ErrStale), errors.Is(err, query.ErrOldLayout):
		// Met only read-only: a writer rebuilds such an index at open.
		return " (run 'archivectl reindex', or any command that writes, to rebuild it)"
	}
	return ""
}
