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

// framesOptions are the flags of archivectl frames.
type framesOptions struct {
	from  string
	to    string
	stats bool
}

// AddFlags declares the flags on fs.
func (o *framesOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.from, "from", "", "first `TICK` (or offset like 1m04s)")
	fs.StringVar(&o.to, "to", "", "last `TICK` (inclusive; default: the end)")
	fs.BoolVar(&o.stats, "stats", false, "report on stderr how many chunks were read")
}

func cmdFrames() *command {
	o := new(framesOptions)
	return &command{
		name:    "frames",
		args:    "ID [--from T] [--to T] [--stats]",
		summary: "print decoded events/frames of a tick range as JSON lines",
		help: `Each line is {"tick":N,"type":"...","data":{...}}. Only the chunks that cover
the range are read: the codec starts from the resume state stored with the
first of them, so seeking deep into a long recording costs one chunk.
--from and --to take ticks or offsets from the start (1m04s). Secrets
(passwords, timeout codes) are shown redacted.`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runFrames(ctx, e, o, args) },
	}
}

func runFrames(ctx context.Context, e *env, o *framesOptions, args []string) error {
	if len(args) != 1 {
		return usagef("frames takes one recording ID")
	}
	rec, err := e.recording(args[0])
	if err != nil {
		return err
	}
	from, to, err := tickRange(rec, o.from, o.to)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(e.stdout, 64<<10)
	enc := json.NewEncoder(bw)
	n := 0
	err = rec.Frames(ctx, from, to, func(f formats.Frame) error {
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
