// archivectl demo: the whole job on recordings shipped inside the binary.
// It runs the real commands against a throwaway archive and prints each
// one before its output, so a newcomer sees what a session looks like.

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/replayarchive/replay/wire"
)

// demoOptions are the flags of archivectl demo.
type demoOptions struct {
	keep   bool
	serve  bool
	listen string
}

// AddFlags declares the flags on fs.
func (o *demoOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.keep, "keep", false, "keep the demo directory afterwards")
	fs.BoolVar(&o.serve, "serve", false, "serve the demo archive afterwards (the web page at the printed URL)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8480", "with --serve: listen on `ADDR`")
}

func cmdDemo() *command {
	o := new(demoOptions)
	return &command{
		name:    "demo",
		args:    "[--keep] [--serve [--listen ADDR]]",
		summary: "run the whole job on embedded recordings in a throwaway archive",
		access:  noAccess,
		help: `Builds an archive in a temporary directory from recordings shipped inside the
binary (made by our own writers), then ingests, lists, shows, searches,
seeks, clips, exports byte for byte, flags, holds and checks, printing every
command it runs. --keep leaves the archive and files behind to explore.
--serve then keeps the demo archive running behind 'archivectl serve' and
prints the URL of the moderators' page (Ctrl-C stops it).`,
		flags: o.AddFlags,
		run:   func(ctx context.Context, e *env, args []string) error { return runDemo(ctx, e, o, args) },
	}
}

func runDemo(ctx context.Context, e *env, o *demoOptions, args []string) error {
	if len(args) > 0 {
		return usagef("demo takes no arguments")
	}
	dir, err := os.MkdirTemp("", "archivectl-demo-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	w := e.stdout
	archiveDir := filepath.Join(dir, "archive")
	recDir := filepath.Join(dir, "recordings")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		return err
	}
	originals := map[string][]byte{}
	for _, d := range demoRecordings() {
		b, err := demoFS.ReadFile("demodata/" + d.name)
		if err != nil {
			return err
		}
		originals[d.name] = b
		if err := os.WriteFile(filepath.Join(recDir, d.name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "A throwaway archive in %s, fed with %d recordings shipped inside this binary\n(DDNet teehistorian and Hollow Cube HCRP files written by our own writers).\n", dir, len(originals))

	// step runs one archivectl command and shows it, its output cut to
	// maxLines lines (0: all).
	step := func(title string, maxLines int, args ...string) (string, error) {
		if title != "" {
			fmt.Fprintf(w, "\n## %s\n", title)
		}
		fmt.Fprintf(w, "$ archivectl %s\n", shellJoin(args, dir))
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{"--archive", archiveDir}, args...), e.stdin, &out, &errOut)
		printHead(w, out.String(), maxLines)
		printHead(w, errOut.String(), maxLines)
		if code != 0 {
			return "", fmt.Errorf("demo step %q failed (exit %d)", title, code)
		}
		return out.String(), nil
	}

	if _, err := step("Ingest: formats are detected from content", 0, "ingest", recDir); err != nil {
		return err
	}
	if _, err := step("List what is archived", 0, "ls"); err != nil {
		return err
	}
	var recs []wire.Recording
	var buf bytes.Buffer
	if code := run(ctx, []string{"--archive", archiveDir, "ls", "--json"}, e.stdin, &buf, io.Discard); code != 0 {
		return fmt.Errorf("demo: ls --json failed")
	}
	if err := json.Unmarshal(buf.Bytes(), &recs); err != nil {
		return err
	}
	var long wire.Recording
	var runs []wire.Recording
	for _, r := range recs {
		if r.Format == "hcrp" {
			runs = append(runs, r)
		} else if r.Ticks > long.Ticks {
			long = r
		}
	}
	id := long.ID[:8]
	if _, err := step("Show one recording (an id prefix is enough)", 24, "show", id); err != nil {
		return err
	}
	if _, err := step("Search: who typed a kick command, and where in the game", 12, "search", "cmd:kick", "--limit", "2"); err != nil {
		return err
	}
	if _, err := step("Search: secrets never reach the index (timeout codes are redacted)", 6, "search", "timeout", "--limit", "1"); err != nil {
		return err
	}
	mid := long.Ticks / 2
	if _, err := step("Seek: decode two ticks from the middle; only the chunk holding them is read", 6,
		"frames", id, "--from", fmt.Sprint(mid), "--to", fmt.Sprint(mid+1), "--stats"); err != nil {
		return err
	}
	clip := filepath.Join(dir, "clip.teehistorian")
	if _, err := step("Clip: a valid teehistorian file of 10 seconds, state at --from synthesized", 0,
		"export", id, "--from", fmt.Sprint(mid), "--to", fmt.Sprint(mid+500), "-o", clip); err != nil {
		return err
	}
	if _, err := step("The clip is a real teehistorian file: it ingests as a recording of its own", 0, "ingest", clip); err != nil {
		return err
	}
	whole := filepath.Join(dir, "whole.teehistorian")
	if _, err := step("Export the whole recording: byte for byte, verified against its sha256", 0, "export", id, "-o", whole); err != nil {
		return err
	}
	got, err := os.ReadFile(whole)
	if err != nil {
		return err
	}
	same := false
	for _, b := range originals {
		same = same || bytes.Equal(b, got)
	}
	sum := sha256.Sum256(got)
	fmt.Fprintf(w, "byte-identical to the file that was ingested: %v (sha256 %s)\n", same, hex.EncodeToString(sum[:8]))
	if !same {
		return fmt.Errorf("demo: exported bytes differ from the original")
	}
	if _, err := step("Moderation: flag it and put it on hold", 0, "flag", id, "griefing", "--note", "reported by two players"); err != nil {
		return err
	}
	if _, err := step("", 0, "hold", id, "--reason", "ticket 4711"); err != nil {
		return err
	}
	if _, err := step("Flags are searchable at once", 3, "search", "flag:griefing"); err != nil {
		return err
	}
	if len(runs) == 2 && len(runs[0].FileFlags) > 0 {
		if _, err := step("Anticheat flags carried by HCRP files are searchable too", 4, "search", "format:hcrp", "flag:"+runs[0].FileFlags[0]); err != nil {
			return err
		}
		if _, err := step("Ghost race: two runs of the same world, tick by tick", 12, "ghost", runs[0].ID[:8], runs[1].ID[:8]); err != nil {
			return err
		}
	}
	if _, err := step("Check: every chunk read back and verified", 0, "check", "--read-data"); err != nil {
		return err
	}
	if _, err := step("Totals", 0, "stats"); err != nil {
		return err
	}
	if o.serve {
		fmt.Fprintf(w, "\nServing the demo archive; open the URL below in a browser (Ctrl-C stops it).\n")
		code := run(ctx, []string{"--archive", archiveDir, "serve", "--listen", o.listen}, e.stdin, e.stdout, e.stderr)
		if code != 0 {
			return errSilent
		}
		return nil
	}
	if o.keep {
		fmt.Fprintf(w, "\nThe archive is kept in %s: try\n  archivectl --archive %s search player:Pulsar\n", archiveDir, archiveDir)
	} else {
		fmt.Fprintf(w, "\nDone; the demo directory was removed (use demo --keep to explore it).\n")
	}
	return nil
}

// printHead prints s, cut to n lines when n > 0.
func printHead(w io.Writer, s string, n int) {
	if s == "" {
		return
	}
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	if n > 0 && len(lines) > n {
		fmt.Fprint(w, strings.Join(lines[:n], ""))
		fmt.Fprintf(w, "… (%d more lines)\n", len(lines)-n)
		return
	}
	fmt.Fprintln(w, strings.Join(lines, ""))
}

// shellJoin shows args as a command line, with the demo directory
// abbreviated and arguments with spaces quoted.
func shellJoin(args []string, dir string) string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, dir, "$DEMO")
		if strings.ContainsAny(a, " \"'") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
