// archivectl show: everything the archive knows about one recording.

package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/internal/units"
	"github.com/replayarchive/replay/wire"
)

// showOptions are the flags of archivectl show.
type showOptions struct {
	json bool
}

// AddFlags declares the flags on fs.
func (o *showOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print one JSON object: the fields of the API's GET /api/v1/recordings/{id}")
}

func cmdShow() *command {
	o := new(showOptions)
	return &command{
		name:    "show",
		args:    "ID [--json]",
		summary: "show one recording: metadata, where it lives, players, chunks, flags, hold",
		help: `--json prints the object GET /api/v1/recordings/{id} answers, field for
field (package wire): flags as objects with their notes, the file's own
flags in file_flags, chunks as a list of tick ranges, the last 100 audit
entries, and "location": local (on this disk alone, not uploaded yet),
remote (in the bucket) or both (in the bucket, and all of it in the local
chunk cache); 'ls --json' lists the same objects.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runShow(ctx, e, o, args) },
	}
}

func runShow(ctx context.Context, e *env, o *showOptions, args []string) error {
	if len(args) != 1 {
		return usagef("show takes one recording ID")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	m, err := x.Manifest(args[0])
	if err != nil {
		return err
	}
	if o.json {
		audit, err := x.Audit(m.ID.String(), 0, 100)
		if err != nil {
			return err
		}
		return writeJSON(e, wire.RecordingOf(x, m, audit))
	}
	// Text taken from the file is printed with its control characters
	// escaped: a crafted name must not drive the moderator's terminal.
	safe := textsafe.Line
	w := e.stdout
	fmt.Fprintf(w, "id:        %s\nformat:    %s\nsession:   %s\n", m.ID, m.Format, orDash(safe(m.Meta.Session)))
	fmt.Fprintf(w, "start:     %s\nduration:  %s (%d ticks", fmtTime(m.Meta.Start), fmtDuration(m.Meta.Duration), m.Meta.Ticks)
	if m.Meta.TickRate > 0 {
		fmt.Fprintf(w, " at %g/s", m.Meta.TickRate)
	}
	fmt.Fprintf(w, ")\nmap:       %s\nserver:    %s\n", orDash(safe(m.Meta.Map)), orDash(safe(m.Meta.Server)))
	fmt.Fprintf(w, "size:      %s native, %s stored (%.1f%%), %d chunks\n", humanBytes(m.NativeBytes), humanBytes(m.StoredBytes),
		100*float64(m.StoredBytes)/float64(max(m.NativeBytes, 1)), len(m.Chunks))
	fmt.Fprintf(w, "sha256:    %s\ningested:  %s from %s\n", m.SHA256, fmtTime(m.Ingested), orDash(safe(m.SourceName)))
	fmt.Fprintf(w, "where:     %s\n", describeLocation(x.Location(m), m))
	if !m.Recompressed.IsZero() {
		fmt.Fprintf(w, "recompressed: %s (zstd's best level)\n", fmtTime(m.Recompressed))
	}
	if m.Hold != nil {
		fmt.Fprintf(w, "hold:      %s (since %s)\n", safe(m.Hold.Reason), fmtTime(m.Hold.At))
	}
	if flags := m.AllFlags(); len(flags) > 0 {
		for i := range flags {
			flags[i] = safe(flags[i])
		}
		fmt.Fprintf(w, "flags:     %s\n", strings.Join(flags, ", "))
		for _, f := range m.Flags {
			if f.Note != "" {
				fmt.Fprintf(w, "           %s: %s\n", safe(f.Name), safe(f.Note))
			}
		}
	}
	fmt.Fprintf(w, "players:   %d\n", len(m.Meta.Players))
	const showPlayers = 20
	for i, p := range m.Meta.Players {
		if i == showPlayers {
			fmt.Fprintf(w, "  … %d more (show --json lists them all)\n", len(m.Meta.Players)-showPlayers)
			break
		}
		fmt.Fprintf(w, "  %s", safe(p.Name))
		if p.ID != "" {
			fmt.Fprintf(w, "  id=%s", safe(p.ID))
		}
		if p.Team != "" {
			fmt.Fprintf(w, "  team=%s", safe(p.Team))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "events:    %d searchable\n", m.EventCount)
	if len(m.Meta.Attrs) > 0 {
		attrs := make(map[string]string, len(m.Meta.Attrs))
		for k, v := range m.Meta.Attrs {
			attrs[safe(k)] = safe(v)
		}
		keys := make([]string, 0, len(attrs))
		for k := range attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "attributes:")
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, attrs[k])
		}
	}
	for _, warn := range m.Meta.Warnings {
		fmt.Fprintf(w, "warning:   %s\n", safe(warn))
	}
	// Offer only what works: a clip where the format can clip, else the
	// whole file and the frames.
	short, ext := m.ID.String()[:8], replay.Extension(m.Format)
	fmt.Fprintf(w, "get it:    archivectl export %s -o %s%s\n", short, short, ext)
	if x.CanClip(m.Format) {
		// A clip of the middle, at most 30 s, never past the end.
		d := m.Meta.Duration.Truncate(time.Second)
		from := max(d/2-15*time.Second, 0).Truncate(time.Second)
		to := min(from+30*time.Second, d)
		fmt.Fprintf(w, "clip:      archivectl export %s --from %s --to %s -o clip-%s%s\n", short, units.FormatDuration(from), units.FormatDuration(to), short, ext)
	} else {
		fmt.Fprintf(w, "frames:    archivectl frames %s --from 0 --to 100   (%s recordings cannot be clipped)\n", short, m.Format)
	}
	return nil
}

// describeLocation says in words where a recording's chunks are.
func describeLocation(loc string, m *archive.Manifest) string {
	switch loc {
	case archive.LocationLocal:
		if m.Live || m.Meta.Growing {
			return "local (on this disk alone; uploaded once sealed, with a remote store)"
		}
		return "local (on this disk alone; with a remote store, uploaded at the next pass past --upload-after)"
	case archive.LocationBoth:
		return "both (" + textsafe.Line(m.Remote) + " in the bucket, all of it in the local chunk cache)"
	}
	return "remote (" + textsafe.Line(m.Remote) + " in the bucket)"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
