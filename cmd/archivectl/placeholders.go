// Commands still being built. Each is replaced by its own file.

package main

import (
	"context"
	"errors"
)

var errNotBuilt = errors.New("not built yet")

func extraCommands() []*command { return nil }

func notBuilt(context.Context, *env, *opts, []string) error { return errNotBuilt }
