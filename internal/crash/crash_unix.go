//go:build unix

package crash

import (
	"os/exec"
	"syscall"
)

// killed: on Unix the kill is SIGKILL, visible in the wait status.
func killed(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
