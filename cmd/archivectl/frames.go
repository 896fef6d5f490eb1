// archivectl frames: decoded events of a tick range as JSON lines.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/replayarchive/replay/formats"
)

func cmdFrames() *command {
	return &command{
		name:    "frames",
		args:    "ID [--from TICK] [--to TICK] [--stats]",
		summary: "print decoded events/frames of a tick range as JSON lines",
		help: `Each line is {"tick":N,"type":"...","data":{...}}. Only the chunks that cover
the range are read: the codec starts from the resume state stored with the
first of them, so seeking deep into a long recording costs one chunk.`,
		flags: func(fs *flag.FlagSet, o *opts) {
			fs.Int64Var(&o.from, "from", 0, "first `TICK`")
			fs.Int64Var(&o.to, "to", -1, "last `TICK` (inclusive; default: the end)")
			fs.BoolVar(&o.stats, "stats", false, "report on stderr how many chunks were read")
		},
		run: runFrames,
	}
}

func runFrames(ctx context.Context, e *env, o *opts, args []string) error {
	if len(args) != 1 {
		return usagef("frames takes one recording ID")
	}
	if o.from < 0 {
		return usagef("--from must not be negative")
	}
	if o.to >= 0 && o.to < o.from {
		return usagef("--to %d is before --from %d", o.to, o.from)
	}
	rec, err := e.recording(args[0])
	if err != nil {
		return err
	}
	codec := codecByName(rec.Manifest().Format)
	if codec == nil {
		return fmt.Errorf("no codec for format %q in this build", rec.Manifest().Format)
	}
	bw := bufio.NewWriterSize(e.stdout, 64<<10)
	enc := json.NewEncoder(bw)
	n := 0
	err = codec.Frames(ctx, rec, o.from, o.to, func(f formats.Frame) error {
		n++
		return enc.Encode(f)
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if o.stats {
		fmt.Fprintf(e.stderr, "%d frames, read %d of %d chunks\n", n, rec.Reads(), len(rec.Chunks()))
	}
	return err
}
