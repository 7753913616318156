package mpi

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"shardlab/emu/fabric"
)

// Launched reports whether mpirun started this process with more than one
// rank (Open MPI sets OMPI_COMM_WORLD_SIZE).
func Launched() bool {
	n, err := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_SIZE"))
	return err == nil && n > 1
}

// Job is this process's part of an MPI run of the emulator.
type Job struct {
	Rank, Size int
	Remote     fabric.Remote
	// BytesTo is what this process sent each rank (headers included), as
	// Open MPI's pml monitoring counts it; nil without MPI.
	BytesTo func() []int64
	// SharedTo is what this process lent each rank in shared memory
	// (ranks on one machine), bytes that did not go over MPI; nil without
	// MPI.
	SharedTo func() []int64
	// Gather collects b from every rank at rank 0.
	Gather func(b []byte) ([][]byte, error)
	// Barrier waits for every rank.
	Barrier func() error
	// Stopped delivers a *StoppedError when a peer rank goes silent; the
	// devices waiting on it stay blocked, and Close then returns at once
	// (MPI_Finalize would wait for the silent rank): end the process.
	Stopped <-chan error
	Close   func()
}

// StoppedError reports a rank that went silent while this one waited on
// it, longer than the timeout, with nothing arriving from it.
type StoppedError struct {
	Rank int // this process's rank
	Peer int // the silent rank
	// Device waited on device From of Peer; both are -1 when the wait was
	// on Peer's part of a step's reduction.
	Device, From int
	Waited       time.Duration
}

func (e *StoppedError) Error() string {
	if e.Device < 0 {
		return fmt.Sprintf("rank %d: waited %v for rank %d to finish its step, and it sends nothing: rank %d has stopped",
			e.Rank, e.Waited, e.Peer, e.Peer)
	}
	return fmt.Sprintf("rank %d: device %d has waited %v for device %d on rank %d, which sends nothing: rank %d has stopped",
		e.Rank, e.Device, e.Waited, e.From, e.Peer, e.Peer)
}
