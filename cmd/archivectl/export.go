// archivectl export: give a recording back in its native format, whole
// (byte-identical, verified) or as a clip of a tick range, or converted to
// another format its codec can write.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/replayarchive/replay/archive"
	"github.com/replayarchive/replay/formats"
)

func cmdExport() *command {
	return &command{
		name:    "export",
		args:    "ID -o FILE [--from TICK] [--to TICK] [--format F] [--opt KEY=VALUE]...",
		summary: "write a recording back as its native file, whole or a clip",
		help: `Without --from/--to the whole recording is written byte for byte as it was
ingested, after checking it against the sha256 recorded at ingest: to a file
via a temporary file renamed into place only when the check passes, to
stdout (-o -) only after a full verification pass.

With --from and/or --to (ticks, inclusive) the codec writes a valid native
file of just that range (for teehistorian: the state at --from synthesized so
any reader decodes it). --format converts to another format the codec can
write (e.g. an .echoreplay session to butter), with --opt settings such as
--opt keyframe-interval=300 --opt compression=zstd.`,
		flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.out, "o", "", "output `FILE` (- for stdout)")
			fs.Int64Var(&o.from, "from", -1, "first `TICK` of a clip")
			fs.Int64Var(&o.to, "to", -1, "last `TICK` of a clip (inclusive)")
			fs.StringVar(&o.format, "format", "", "convert to this `format` instead of the native one")
			fs.Var(&o.exportOpts, "opt", "format setting `KEY=VALUE` for --format (repeatable)")
		},
		run: runExport,
	}
}

func runExport(ctx context.Context, e *env, o *opts, args []string) error {
	if len(args) != 1 {
		return usagef("export takes one recording ID")
	}
	if o.out == "" {
		return usagef("-o FILE is required (- for stdout)")
	}
	if o.from >= 0 && o.to >= 0 && o.to < o.from {
		return usagef("--to %d is before --from %d", o.to, o.from)
	}
	rec, err := e.recording(args[0])
	if err != nil {
		return err
	}
	m := rec.Manifest()
	clip := o.from >= 0 || o.to >= 0
	native := o.format == "" || o.format == m.Format
	if !clip && native {
		return exportWhole(ctx, e, rec, o.out)
	}
	codec := codecByName(m.Format)
	if codec == nil {
		return fmt.Errorf("no codec for format %q in this build", m.Format)
	}
	from := max(o.from, 0)
	write := func(w io.Writer) error {
		if native {
			err := codec.Clip(ctx, rec, from, o.to, w)
			if errors.Is(err, formats.ErrClipUnsupported) {
				return fmt.Errorf("%s: %w; export the whole recording instead (no --from/--to)", m.Format, err)
			}
			return err
		}
		ex, ok := codec.(formats.Exporter)
		if !ok || !contains(ex.ExportFormats(), o.format) {
			can := []string{m.Format}
			if ok {
				can = append(can, ex.ExportFormats()...)
			}
			return fmt.Errorf("cannot convert %s to %q (can write: %s)", m.Format, o.format, strings.Join(can, ", "))
		}
		kv := map[string]string{}
		for _, s := range o.exportOpts {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return usagef("--opt %q: want KEY=VALUE", s)
			}
			kv[k] = v
		}
		return ex.Export(ctx, rec, o.format, from, o.to, kv, w)
	}
	if err := writeOutput(e, o.out, write); err != nil {
		return err
	}
	if o.out != "-" {
		what := m.Format + " clip"
		if !native {
			what = fmt.Sprintf("%s converted to %s", m.Format, o.format)
		}
		fmt.Fprintf(e.stderr, "wrote %s (%s, ticks %d..%s, read %d of %d chunks)\n", o.out,
			what, from, tickOrEnd(o.to), rec.Reads(), len(m.Chunks))
	}
	return nil
}

func tickOrEnd(t int64) string {
	if t < 0 {
		return "end"
	}
	return fmt.Sprint(t)
}

// exportWhole writes the native bytes only once they are known to match
// the recorded sha256.
func exportWhole(ctx context.Context, e *env, rec *archive.Recording, out string) error {
	m := rec.Manifest()
	if out == "-" {
		if err := rec.Verify(ctx); err != nil {
			return err
		}
		_, err := rec.WriteTo(ctx, e.stdout)
		return err
	}
	err := writeOutput(e, out, func(w io.Writer) error {
		_, err := rec.WriteTo(ctx, w)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s (%s, %d bytes, sha256 %s verified)\n", out, m.Format, m.NativeBytes, m.SHA256[:16]+"…")
	return nil
}

// writeOutput runs write into a temporary file beside out and renames it
// into place only if write succeeds; "-" writes to stdout directly.
func writeOutput(e *env, out string, write func(io.Writer) error) error {
	if out == "-" {
		return write(e.stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file private; an export is an ordinary file.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
