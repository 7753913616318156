// Package cputime reads the CPU time the process has used, for the
// benchmarks that report CPU seconds beside wall time: on a loaded
// machine a search's wall time says more of the neighbours than of the
// search.
package cputime
