// Package crash lets crash tests kill their own child process the way a
// power cut or the OOM killer would (no deferred calls, no flush) and
// recognise that death from the parent, on every platform the module builds
// for.
package crash

import (
	"errors"
	"os"
	"os/exec"
)

// Self kills the calling process at once, without running deferred calls:
// what a crash test's child does at the moment it wants to die.
func Self() {
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		p.Kill()
	}
	select {} // Kill is asynchronous: never return to the caller
}

// Killed reports whether err, from running a child command, says the child
// died by the kill that Self sends rather than by exiting.
func Killed(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && killed(ee)
}
