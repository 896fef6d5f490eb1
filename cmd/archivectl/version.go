// archivectl version and init.

package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

func cmdVersion() *command {
	return &command{
		name: "version", args: "", summary: "print the build's version",
		access: noAccess,
		run: func(ctx context.Context, e *env, args []string) error {
			v, rev := "(devel)", ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				v = bi.Main.Version
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = " " + s.Value
					}
				}
				fmt.Fprintf(e.stdout, "archivectl %s%s (%s)\n", v, rev, bi.GoVersion)
				return nil
			}
			fmt.Fprintf(e.stdout, "archivectl %s\n", v)
			return nil
		},
	}
}

func cmdInit() *command {
	return &command{
		name: "init", args: "", summary: "create an empty archive at --archive",
		help:   `Read commands never create an archive; init (or the first ingest) does.`,
		access: createAccess,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("init takes no arguments")
			}
			if _, err := e.lib(); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "archive ready at %s\n", e.archiveDir)
			return nil
		},
	}
}
