//go:build !unix

package server_test

import "time"

// processCPU is 0 where the process's CPU time is not read: the CPU per
// request of BenchmarkSearchAtScale then reads 0.
func processCPU() time.Duration { return 0 }
