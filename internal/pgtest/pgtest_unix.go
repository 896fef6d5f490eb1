//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// serverUser is the account PostgreSQL runs as when the tests run as root
// (Debian's postgresql package makes it).
const serverUser = "postgres"

// runAsServerUser returns what makes a command run as serverUser when this
// process is root, having given serverUser dir; otherwise it changes
// nothing.
func runAsServerUser(dir string) (func(*exec.Cmd), error) {
	if os.Geteuid() != 0 {
		return func(*exec.Cmd) {}, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has uid %q gid %q", serverUser, u.Uid, u.Gid)
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, err
	}
	return func(cmd *exec.Cmd) {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true},
		}
	}, nil
}

// stopServer asks postgres for an immediate shutdown (SIGQUIT): it ends
// its own processes without a checkpoint; the files are thrown away.
func stopServer(p *os.Process) {
	p.Signal(syscall.SIGQUIT)
}
