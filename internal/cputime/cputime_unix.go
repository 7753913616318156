//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Self is the CPU time the process has used, user and system, or 0 when
// it cannot be read.
func Self() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
