// Command simgen writes DDNet-like teehistorian files from the independent
// server simulation in internal/gen/ddnetsim, one kind of server at a time,
// for the kinds step of docs/bench/run.sh: benchmark data that was not
// shaped to the archive's storage layout (issue 34). thgen, the older
// generator, stays as it is for the other steps.
//
//	simgen -list                              # the kinds and their parameters
//	simgen -kind small -n 120 -seed 1 -o DIR  # 120 files named <game_uuid>.teehistorian
//	simgen -kind full -scale 0.1 -o DIR       # files a tenth as long (tests, trials)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/replayarchive/replay/internal/gen/ddnetsim"
)

func main() {
	kind := flag.String("kind", "", "kind of data (simgen -list)")
	n := flag.Int("n", 0, "number of files (0: the kind's bench count)")
	seed := flag.Uint64("seed", 1, "seed; the same kind, seed and n give the same files")
	out := flag.String("o", "", "output directory")
	scale := flag.Float64("scale", 1, "multiply file lengths by this")
	list := flag.Bool("list", false, "list the kinds")
	verbose := flag.Bool("v", false, "print one line per file")
	flag.Parse()
	if *list {
		for _, k := range ddnetsim.Kinds() {
			fmt.Printf("%-10s %s\n           players %d-%d, %g-%g min a file, %d-%d files a server, busy %g, bench files %d\n",
				k.Name, k.Doc, k.Players[0], k.Players[1], k.Minutes[0], k.Minutes[1], k.FilesPerServer[0], k.FilesPerServer[1], k.Busy, k.BenchFiles)
		}
		return
	}
	if *kind == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "simgen: -kind and -o are required (simgen -list for the kinds)")
		os.Exit(2)
	}
	if err := run(*kind, *n, *seed, *scale, *out, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "simgen:", err)
		os.Exit(1)
	}
}

func run(kind string, n int, seed uint64, scale float64, out string, verbose bool) error {
	k, err := ddnetsim.Lookup(kind)
	if err != nil {
		return err
	}
	if scale != 1 {
		k = k.Scaled(scale)
	}
	if n <= 0 {
		n = k.BenchFiles
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	s := ddnetsim.NewSession(k, seed)
	for range n {
		id := s.Next()
		path := filepath.Join(out, id.String()+".teehistorian")
		info, err := writeFile(s, id, path)
		if err != nil {
			return err
		}
		if verbose {
			fmt.Printf("%s %s %q %q ticks=%d players=%d finished=%v\n", path, info.Version, info.Server, info.Map, info.Ticks, info.MaxPlayers, info.Finished)
		}
	}
	return nil
}

func writeFile(s *ddnetsim.Session, id [16]byte, path string) (ddnetsim.FileInfo, error) {
	f, err := os.Create(path)
	if err != nil {
		return ddnetsim.FileInfo{}, fmt.Errorf("create %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	info, err := s.Write(w, id)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return info, fmt.Errorf("write %s: %w", path, err)
	}
	return info, nil
}
