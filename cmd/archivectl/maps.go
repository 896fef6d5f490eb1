// archivectl maps: the DDNet maps the archive draws recordings against.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/replayarchive/replay"
	"github.com/replayarchive/replay/wire"
)

// mapsOptions are the flags of archivectl maps.
type mapsOptions struct {
	json bool
}

// AddFlags declares the flags on fs.
func (o *mapsOptions) AddFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON")
}

func cmdMaps() *command {
	o := new(mapsOptions)
	return &command{
		name: "maps", args: "add DIR|FILE... [--json] | ls [--json]",
		summary: "add the DDNet maps your servers play, so the web page draws games over them",
		help: `A DDNet teehistorian recording names its map by sha256 (map_sha256 in
its header). 'maps add' reads each map file (a directory: every .map file
in it and below), checks it, and keeps it under the archive directory by
its sha256; the web page then draws the map's game layer (walls, freeze,
death, start and finish) under the players' trails. Each file is reported
as added, already there, or not a map with the reason. 'maps ls' lists the
stored maps.`,
		access: writeAccess,
		flags:  o.AddFlags,
		run:    func(ctx context.Context, e *env, args []string) error { return runMaps(ctx, e, o, args) },
	}
}

// mapResult is one file's outcome, as --json prints it.
type mapResult struct {
	Path    string    `json:"path"`
	Outcome string    `json:"outcome"` // added, exists, not_a_map, error
	Map     *wire.Map `json:"map,omitempty"`
	Error   string    `json:"error,omitempty"`
}

func runMaps(ctx context.Context, e *env, o *mapsOptions, args []string) error {
	if len(args) == 0 {
		return usagef("maps takes add or ls")
	}
	x, err := e.lib()
	if err != nil {
		return err
	}
	switch args[0] {
	case "ls":
		if len(args) != 1 {
			return usagef("maps ls takes no arguments")
		}
		maps, bad, err := x.Maps()
		if err != nil {
			return err
		}
		for _, err := range bad {
			fmt.Fprintf(e.stderr, "warning: %v\n", err)
		}
		if o.json {
			out := []wire.Map{}
			for _, m := range maps {
				out = append(out, wire.MapOf(m))
			}
			return writeJSON(e, out)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SHA256\tCRC\tBYTES\tGAME LAYER")
		for _, m := range maps {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d×%d\n", m.SHA256, m.CRC, m.Size, m.Width, m.Height)
		}
		return tw.Flush()
	case "add":
		if len(args) < 2 {
			return usagef("maps add takes map files or directories")
		}
		var results []mapResult
		failed := false
		add := func(path string) {
			r := mapResult{Path: path}
			a, err := x.AddMapFile(ctx, e.who, path)
			switch {
			case errors.Is(err, replay.ErrBadMap) || errors.Is(err, replay.ErrTooLarge):
				r.Outcome, r.Error = "not_a_map", strings.TrimPrefix(err.Error(), path+": ")
				failed = true
			case err != nil:
				r.Outcome, r.Error = "error", err.Error()
				failed = true
			case a.Existed:
				m := wire.MapAddOf(a)
				r.Outcome, r.Map = "exists", &m
			default:
				m := wire.MapAddOf(a)
				r.Outcome, r.Map = "added", &m
			}
			if !o.json {
				switch r.Outcome {
				case "added":
					fmt.Fprintf(e.stdout, "added     %s  %s (game layer %d×%d)\n", r.Map.SHA256, path, r.Map.Width, r.Map.Height)
				case "exists":
					fmt.Fprintf(e.stdout, "exists    %s  %s\n", r.Map.SHA256, path)
				default:
					fmt.Fprintf(e.stderr, "not added %s: %s\n", path, r.Error)
				}
				if r.Map != nil && r.Map.NotShared != "" {
					fmt.Fprintf(e.stderr, "not shared with the other nodes: %s: %s\n", path, r.Map.NotShared)
				}
			}
			results = append(results, r)
		}
		for _, arg := range args[1:] {
			p := e.path(arg)
			st, err := os.Stat(p)
			if err != nil {
				add(p) // reported as the file's error
				continue
			}
			if !st.IsDir() {
				add(p)
				continue
			}
			found := 0
			err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.Type().IsRegular() && strings.EqualFold(filepath.Ext(path), ".map") {
					found++
					add(path)
				}
				return ctx.Err()
			})
			if err != nil {
				return fmt.Errorf("maps add %s: %w", p, err)
			}
			if found == 0 {
				fmt.Fprintf(e.stderr, "warning: %s holds no .map file\n", p)
			}
		}
		if o.json {
			if err := writeJSON(e, results); err != nil {
				return err
			}
		}
		if failed {
			return errSilent
		}
		return nil
	}
	return usagef("maps takes add or ls, not %q", args[0])
}
