// Commands still being built. Each is replaced by its own file.

package main

import (
	"context"
	"errors"
)

var errNotBuilt = errors.New("not built yet")

func cmdRetention() *command {
	return &command{name: "retention", args: "set|show", summary: "store or show the retention policy", run: notBuilt}
}
func cmdPrune() *command {
	return &command{name: "prune", args: "[--dry-run]", summary: "apply retention", run: notBuilt}
}
func extraCommands() []*command { return nil }

func notBuilt(context.Context, *env, *opts, []string) error { return errNotBuilt }
