//go:build unix

package server_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used, for
// BenchmarkSearchAtScale's CPU per request.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
