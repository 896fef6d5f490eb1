//go:build !unix

package pgtest

import (
	"os"
	"os/exec"
)

// runAsServerUser changes nothing: switching users is for Unix's root.
func runAsServerUser(string) (func(*exec.Cmd), error) {
	return func(*exec.Cmd) {}, nil
}

// stopServer kills postgres: there is no SIGQUIT.
func stopServer(p *os.Process) {
	p.Kill()
}
