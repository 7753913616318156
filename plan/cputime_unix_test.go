//go:build unix

package plan

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system: on a
// loaded machine a search's wall time says more of the neighbours than
// of the search.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
