// archivectl export: give a recording back in its native format, whole
// (byte-identical, verified) or as a clip of a tick range, or converted to
// another format its codec can write.

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/internal/units"
)

// exportOptions are the flags of archivectl export.
type exportOptions struct {
	out        string
	from       string
	to         string
	at         string
	around     string
	redact     bool
	format     string
	exportOpts stringList
	force      bool
}

// AddFlags declares the flags on fs.
func (o *exportOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.out, "o", "", "output `FILE` (- for stdout)")
	fs.StringVar(&o.from, "from", "", "first `TICK` (or offset like 1m04s) of a clip")
	fs.StringVar(&o.to, "to", "", "last `TICK` (or offset) of a clip, inclusive")
	fs.StringVar(&o.at, "at", "", "clip around this wall-clock `TIME` (RFC 3339), with --around")
	fs.StringVar(&o.around, "around", "30s", "with --at: `DUR` before and after")
	fs.BoolVar(&o.redact, "redact", false, "replace secrets (passwords, timeout codes) in the written file")
	fs.StringVar(&o.format, "format", "", "convert to this `format` instead of the native one")
	fs.Var(&o.exportOpts, "opt", "format setting `KEY=VALUE` for --format (repeatable)")
	fs.BoolVar(&o.force, "force", false, "overwrite FILE if it exists")
}

func cmdExport() *command {
	o := new(exportOptions)
	return &command{
		name:    "export",
		args:    "ID -o FILE [--force] [--from T] [--to T | --at TIME --around DUR] [--redact] [--format F] [--opt KEY=VALUE]...",
		summary: "write a recording back as its native file, whole or a clip",
		help: `Without --from/--to the whole recording is written byte for byte as it was
ingested, checked against the sha256 recorded at ingest: to a file via a
temporary file renamed into place only when the check passes, to stdout
(-o -) only after a full verification pass. Whole byte-identical originals
carry every secret the file holds (passwords, timeout codes): through a
server they are for admins only; --redact writes a valid file of the
format with the secrets replaced, as viewers get it.

--from and --to take ticks (inclusive) or offsets from the recording's
start (1m04s, 90s); --at TIME --around DUR clips DUR either side of a
wall-clock time (RFC 3339). The codec writes a valid native file of just
that range (for teehistorian: the state at --from synthesized so any
reader decodes it). A range that starts past the end is an error; one that
runs past it is cut at the last tick, and the summary says so. Formats
that cannot be clipped (StarCraft II) say so. --format converts to another
format the codec can write (an .echoreplay session to butter), with --opt
settings such as --opt keyframe-interval=300 --opt compression=zstd.

The file is created with the mode your umask allows. An existing FILE is
refused (exit 2) unless --force is given, whole exports and clips alike;
the check is made again when the finished file is put in place, so a file
created meanwhile is not overwritten either.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runExport(ctx, e, o, args) },
	}
}

func runExport(ctx context.Context, e *env, o *exportOptions, args []string) error {
	if len(args) != 1 {
		return usagef("export takes one recording ID")
	}
	if o.out == "" {
		return usagef("-o FILE is required (- for stdout)")
	}
	if f, err1 := strconv.ParseInt(o.from, 10, 64); err1 == nil {
		if t, err2 := strconv.ParseInt(o.to, 10, 64); err2 == nil && t < f {
			return usagef("--to %d is before --from %d", t, f)
		}
	}
	out := e.path(o.out)
	if err := refuseOverwrite(out, o.force); err != nil {
		return err
	}
	rec, err := e.recording(args[0])
	if err != nil {
		return err
	}
	from, to, clip, err := clipRange(rec, o)
	if err != nil {
		return err
	}
	m := rec.Manifest()
	native := o.format == "" || o.format == m.Format
	if !clip && native {
		return exportWhole(ctx, e, rec, out, o.redact, o.force)
	}
	var wrote [2]int64
	write := func(w io.Writer) error {
		if native {
			f, t, err := rec.Clip(ctx, from, to, w, o.redact)
			wrote = [2]int64{f, t}
			return err
		}
		kv := map[string]string{}
		for _, s := range o.exportOpts {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return usagef("--opt %q: want KEY=VALUE", s)
			}
			kv[k] = v
		}
		wrote = [2]int64{from, to}
		return rec.Convert(ctx, o.format, from, to, kv, w)
	}
	if err := writeOutput(e, out, o.force, write); err != nil {
		return err
	}
	if o.out != "-" {
		what := m.Format + " clip"
		if !native {
			what = fmt.Sprintf("%s converted to %s", m.Format, o.format)
		}
		if o.redact {
			what += ", redacted"
		}
		end := strconv.FormatInt(wrote[1], 10)
		if wrote[1] < 0 {
			end = "end"
		}
		note := ""
		if to > rec.LastTick() {
			note = fmt.Sprintf("; --to %d is past the last tick, cut there", to)
		}
		fmt.Fprintf(e.stderr, "wrote %s (%s, ticks %d..%s, read %d of %d chunks%s)\n", o.out,
			what, wrote[0], end, rec.Reads(), len(rec.Chunks()), note)
	}
	return nil
}

// clipRange reads --from, --to, --at and --around into a tick range; clip
// is false when none was given.
func clipRange(rec *replay.Recording, o *exportOptions) (from, to int64, clip bool, err error) {
	from, to = 0, -1
	if o.at != "" {
		if o.from != "" || o.to != "" {
			return 0, 0, false, usagef("--at goes without --from and --to")
		}
		at, err := time.Parse(time.RFC3339Nano, o.at)
		if err != nil {
			return 0, 0, false, usagef("--at %q: want an RFC 3339 time like 2023-11-27T21:48:10Z", o.at)
		}
		around, err := units.ParseDuration(o.around)
		if err != nil {
			return 0, 0, false, usagef("--around: %v", err)
		}
		start := rec.Meta().Start
		if start.IsZero() {
			return 0, 0, false, fmt.Errorf("the recording does not say when it started: use --from/--to")
		}
		off := at.Sub(start)
		if off < 0 || off > rec.Meta().Duration {
			return 0, 0, false, fmt.Errorf("%s is outside the recording (%s to %s)", o.at,
				start.UTC().Format(time.RFC3339), start.Add(rec.Meta().Duration).UTC().Format(time.RFC3339))
		}
		return rec.TickAt(max(off-around, 0)), rec.TickAt(off + around), true, nil
	}
	if o.from != "" || o.to != "" {
		if from, to, err = tickRange(rec, o.from, o.to); err != nil {
			return 0, 0, false, err
		}
		clip = true
	}
	return from, to, clip, nil
}

// exportWhole writes the native bytes only once they are known to match
// the recorded sha256 (or, with redact, a redacted copy).
func exportWhole(ctx context.Context, e *env, rec *replay.Recording, out string, redact, force bool) error {
	m := rec.Manifest()
	if out == "-" {
		if !redact {
			if err := rec.Verify(ctx); err != nil {
				return err
			}
		}
		return rec.Export(ctx, e.stdout, redact)
	}
	err := writeOutput(e, out, force, func(w io.Writer) error { return rec.Export(ctx, w, redact) })
	if err != nil {
		return err
	}
	if redact {
		fmt.Fprintf(e.stderr, "wrote %s (%s, redacted copy of %d bytes)\n", out, m.Format, m.NativeBytes)
		return nil
	}
	fmt.Fprintf(e.stderr, "wrote %s (%s, %d bytes, sha256 %s verified)\n", out, m.Format, m.NativeBytes, m.SHA256[:16]+"…")
	return nil
}

// refuseOverwrite is the usage error for an output file that exists,
// unless force; "-" (stdout) is never refused.
func refuseOverwrite(out string, force bool) error {
	if out == "-" || force {
		return nil
	}
	if _, err := os.Lstat(out); err == nil {
		return usagef("%s exists; --force overwrites it", out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// writeOutput runs write into a temporary file beside out and puts it in
// place only if write succeeds: renamed over out with force, otherwise
// linked to out, which fails if out has come to exist meanwhile (where
// the file system has no hard links, checked and renamed). "-" writes to
// stdout directly. The file is created with mode 0666 less the umask, as
// any new file.
func writeOutput(e *env, out string, force bool, write func(io.Writer) error) error {
	if out == "-" {
		return write(e.stdout)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmpName := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+"."+hex.EncodeToString(rnd[:])+".tmp")
	tmp, err := os.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	defer os.Remove(tmpName)
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if force {
		return os.Rename(tmpName, out)
	}
	switch err := os.Link(tmpName, out); {
	case err == nil:
		return nil // the deferred Remove drops the temporary name
	case errors.Is(err, fs.ErrExist):
		return usagef("%s exists (created while the export ran); --force overwrites it", out)
	}
	if err := refuseOverwrite(out, false); err != nil {
		return err
	}
	return os.Rename(tmpName, out)
}
