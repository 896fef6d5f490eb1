// Command thgen writes generated teehistorian files for the performance
// harness (docs/bench/run.sh), so the figures in docs/PERFORMANCE.md can be
// reproduced without copying any data into the repository.
//
//	thgen -dur 1h -seed 1 -o /tmp/bench/hour.teehistorian
//	thgen -dur 3m -n 200 -o /tmp/bench/games   # 200 files in a directory
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/replayarchive/replay/internal/gen/teehistoriangen"
)

func main() {
	dur := flag.Duration("dur", time.Hour, "recorded game time per file")
	players := flag.Int("players", 16, "client slots in use")
	seed := flag.Uint64("seed", 1, "seed of the first file (file i uses seed+i)")
	n := flag.Int("n", 1, "number of files; with n > 1, -o is a directory")
	out := flag.String("o", "", "output file (n = 1) or directory (n > 1)")
	messages := flag.Bool("messages", false, "add emoticon and kill game messages")
	cmds := flag.Int("cmds", 0, "console commands per hour of game time on top of the simulated ones")
	idle := flag.Float64("idle", 0, "share of the time a player stands still (0: the generator's default, about 5%)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "thgen: -o is required")
		os.Exit(2)
	}
	if err := run(*out, *n, teehistoriangen.Options{Duration: *dur, Players: *players, Seed: *seed, Messages: *messages, CommandsPerHour: *cmds, Idle: *idle}); err != nil {
		fmt.Fprintln(os.Stderr, "thgen:", err)
		os.Exit(1)
	}
}

// run writes n files; file i starts i minutes after the default start so
// that every file has its own bytes and id.
func run(out string, n int, opt teehistoriangen.Options) error {
	if n <= 1 {
		return writeOne(out, opt)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		o := opt
		o.Seed = opt.Seed + uint64(i)
		o.Start = start.Add(time.Duration(i) * opt.Duration)
		if err := writeOne(filepath.Join(out, fmt.Sprintf("game-%04d.teehistorian", i)), o); err != nil {
			return err
		}
	}
	return nil
}

func writeOne(path string, opt teehistoriangen.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := teehistoriangen.Generate(w, opt); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
