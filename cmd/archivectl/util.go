// Small output helpers shared by the commands.

package main

import (
	"encoding/json"
	"fmt"

	"github.com/replayarchive/replay"
)

// writeJSON prints v as indented JSON on stdout.
func writeJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// plural is n and the noun for n of it: "1 recording", "2 recordings"
// (many is one with an "s" when ""), so counts read right at 1.
func plural(n int, one, many string) string {
	if many == "" {
		many = one + "s"
	}
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// tickRange reads --from and --to of a command over a recording's ticks
// (ticks or offsets, see Recording.ParseFrom and ParseTick): from 0 and to
// -1 (the end) when not given; a usage error for a bad value or a range
// that ends before it starts.
func tickRange(rec *replay.Recording, fromArg, toArg string) (from, to int64, err error) {
	from, to = 0, -1
	if fromArg != "" {
		if from, err = rec.ParseFrom(fromArg); err != nil {
			return 0, 0, usagef("--from: %v", err)
		}
	}
	if toArg != "" {
		if to, err = rec.ParseTick(toArg); err != nil {
			return 0, 0, usagef("--to: %v", err)
		}
		if to < from {
			return 0, 0, usagef("--to %s is before --from %s", toArg, fromArg)
		}
	}
	return from, to, nil
}
