package mpi

import (
	"os"
	"strconv"
)

// Launched reports whether mpirun started this process with more than one
// rank (Open MPI sets OMPI_COMM_WORLD_SIZE).
func Launched() bool {
	n, err := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_SIZE"))
	return err == nil && n > 1
}
