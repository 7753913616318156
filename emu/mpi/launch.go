package mpi

import (
	"os"
	"strconv"

	"shardlab/emu"
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
	Remote     emu.Remote
	// BytesTo is what this process sent each rank (headers included), as
	// Open MPI's pml monitoring counts it; nil without MPI.
	BytesTo func() []int64
	// Gather collects b from every rank at rank 0.
	Gather func(b []byte) ([][]byte, error)
	Close  func()
}
