//go:build !unix

package crash

import "os/exec"

// killed: elsewhere (Windows' TerminateProcess) the kill leaves exit code 1
// and no signal to tell it from an ordinary failure; accept any exit that
// is not a success.
func killed(ee *exec.ExitError) bool {
	return ee.ExitCode() != 0
}
