// archivectl show: everything the archive knows about one recording.

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
	"github.com/replayarchive/replay/internal/textsafe"
	"github.com/replayarchive/replay/internal/units"
)

// showOptions are the flags of archivectl show.
type showOptions struct {
	json bool
}

// AddFlags declares the flags on fs.
func (o *showOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print one JSON object")
}

func cmdShow() *command {
	o := new(showOptions)
	return &command{
		name:    "show",
		args:    "ID [--json]",
		summary: "show one recording: metadata, players, chunks, flags, hold",
		flags:   o.AddFlags,
		run:     func(ctx context.Context, e *env, args []string) error { return runShow(ctx, e, o, args) },
	}
}

// recordingJSON is the shape of a recording in --json output.
type recordingJSON struct {
	ID          string           `json:"id"`
	Session     string           `json:"session"`
	Format      string           `json:"format"`
	Start       string           `json:"start"`
	DurationMS  int64            `json:"duration_ms"`
	Ticks       int64            `json:"ticks"`
	TickRate    float64          `json:"tick_rate,omitempty"`
	Players     []formats.Player `json:"players"`
	Map         string           `json:"map"`
	Server      string           `json:"server"`
	Flags       []string         `json:"flags"`
	FlagNotes   []archive.Flag   `json:"flag_notes,omitempty"`
	Hold        *archive.Hold    `json:"hold,omitempty"`
	NativeBytes int64            `json:"native_bytes"`
	StoredBytes int64            `json:"stored_bytes"`
	Chunks      int              `json:"chunks"`
	SHA256      string           `json:"sha256"`
	Ingested    string           `json:"ingested"`
	// Recompressed is when 'recompress' re-encoded the chunks; "" if never.
	Recompressed string            `json:"recompressed,omitempty"`
	Source       string            `json:"source,omitempty"`
	Events       int               `json:"events"`
	Attrs        map[string]string `json:"attrs,omitempty"`
	Warnings     []string          `json:"warnings,omitempty"`
}

func toJSON(m *archive.Manifest) recordingJSON {
	start := ""
	if !m.Meta.Start.IsZero() {
		start = fmtTime(m.Meta.Start)
	}
	players := m.Meta.Players
	if players == nil {
		players = []formats.Player{}
	}
	return recordingJSON{
		ID: m.ID.String(), Session: m.Meta.Session, Format: m.Format, Start: start,
		DurationMS: m.Meta.Duration.Milliseconds(), Ticks: m.Meta.Ticks, TickRate: m.Meta.TickRate,
		Players: players, Map: m.Meta.Map, Server: m.Meta.Server, Flags: nonNil(m.AllFlags()),
		FlagNotes: m.Flags, Hold: m.Hold, NativeBytes: m.NativeBytes, StoredBytes: m.StoredBytes,
		Chunks: len(m.Chunks), SHA256: m.SHA256, Ingested: fmtTime(m.Ingested), Source: m.SourceName,
		Events: m.EventCount, Attrs: m.Meta.Attrs, Warnings: m.Meta.Warnings, Recompressed: recompressedAt(m),
	}
}

// recompressedAt formats when m's chunks were re-encoded, "" if never.
func recompressedAt(m *archive.Manifest) string {
	if m.Recompressed.IsZero() {
		return ""
	}
	return fmtTime(m.Recompressed)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func runShow(ctx context.Context, e *env, o *showOptions, args []string) error {
	if len(args) != 1 {
		return usagef("show takes one recording ID")
	}
	a, id, err := e.resolve(args[0])
	if err != nil {
		return err
	}
	m, err := a.Manifest(id)
	if err != nil {
		return err
	}
	j := toJSON(m)
	if o.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(j)
	}
	// Text taken from the file is printed with its control characters
	// escaped: a crafted name must not drive the moderator's terminal.
	safe := textsafe.Line
	j.Session, j.Map, j.Server, j.Source = safe(j.Session), safe(j.Map), safe(j.Server), safe(j.Source)
	for i := range j.Flags {
		j.Flags[i] = safe(j.Flags[i])
	}
	for i, p := range j.Players {
		j.Players[i] = formats.Player{Name: safe(p.Name), ID: safe(p.ID), Team: safe(p.Team)}
	}
	for i := range j.Warnings {
		j.Warnings[i] = safe(j.Warnings[i])
	}
	attrs := make(map[string]string, len(j.Attrs))
	for k, v := range j.Attrs {
		attrs[safe(k)] = safe(v)
	}
	j.Attrs = attrs
	w := e.stdout
	fmt.Fprintf(w, "id:        %s\nformat:    %s\nsession:   %s\n", j.ID, j.Format, orDash(j.Session))
	fmt.Fprintf(w, "start:     %s\nduration:  %s (%d ticks", orDash(j.Start), fmtDuration(m.Meta.Duration), j.Ticks)
	if j.TickRate > 0 {
		fmt.Fprintf(w, " at %g/s", j.TickRate)
	}
	fmt.Fprintf(w, ")\nmap:       %s\nserver:    %s\n", orDash(j.Map), orDash(j.Server))
	fmt.Fprintf(w, "size:      %s native, %s stored (%.1f%%), %d chunks\n", humanBytes(j.NativeBytes), humanBytes(j.StoredBytes),
		100*float64(j.StoredBytes)/float64(max(j.NativeBytes, 1)), j.Chunks)
	fmt.Fprintf(w, "sha256:    %s\ningested:  %s from %s\n", j.SHA256, j.Ingested, orDash(j.Source))
	if j.Recompressed != "" {
		fmt.Fprintf(w, "recompressed: %s (zstd's best level)\n", j.Recompressed)
	}
	if m.Hold != nil {
		fmt.Fprintf(w, "hold:      %s (since %s)\n", safe(m.Hold.Reason), fmtTime(m.Hold.At))
	}
	if len(j.Flags) > 0 {
		fmt.Fprintf(w, "flags:     %s\n", strings.Join(j.Flags, ", "))
		for _, f := range m.Flags {
			if f.Note != "" {
				fmt.Fprintf(w, "           %s: %s\n", safe(f.Name), safe(f.Note))
			}
		}
	}
	fmt.Fprintf(w, "players:   %d\n", len(j.Players))
	const showPlayers = 20
	for i, p := range j.Players {
		if i == showPlayers {
			fmt.Fprintf(w, "  … %d more (show --json lists them all)\n", len(j.Players)-showPlayers)
			break
		}
		fmt.Fprintf(w, "  %s", p.Name)
		if p.ID != "" {
			fmt.Fprintf(w, "  id=%s", p.ID)
		}
		if p.Team != "" {
			fmt.Fprintf(w, "  team=%s", p.Team)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "events:    %d searchable\n", j.Events)
	if len(j.Attrs) > 0 {
		keys := make([]string, 0, len(j.Attrs))
		for k := range j.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "attributes:")
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, j.Attrs[k])
		}
	}
	for _, warn := range j.Warnings {
		fmt.Fprintf(w, "warning:   %s\n", warn)
	}
	// Offer only what works: a clip where the format can clip, else the
	// whole file and the frames.
	short, ext := j.ID[:8], replay.Extension(j.Format)
	fmt.Fprintf(w, "get it:    archivectl export %s -o %s%s\n", short, short, ext)
	if x, err := e.lib(); err == nil && x.CanClip(j.Format) {
		// A clip of the middle, at most 30 s, never past the end.
		d := m.Meta.Duration.Truncate(time.Second)
		from := max(d/2-15*time.Second, 0).Truncate(time.Second)
		to := min(from+30*time.Second, d)
		fmt.Fprintf(w, "clip:      archivectl export %s --from %s --to %s -o clip-%s%s\n", short, units.FormatDuration(from), units.FormatDuration(to), short, ext)
	} else {
		fmt.Fprintf(w, "frames:    archivectl frames %s --from 0 --to 100   (%s recordings cannot be clipped)\n", short, j.Format)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
