//go:build !unix

package cputime

import "time"

// Self is 0 where the process's CPU time is not read: benchmarks then
// report wall time only.
func Self() time.Duration { return 0 }
