//go:build !mpi

// Package mpi is a thin cgo layer over Open MPI and the emulator's
// transport across processes (build tag mpi). This build has no MPI: it is
// the one-rank stand-in, so go test ./... needs no MPI library. Its World
// is a job of one rank whose collectives return their input; joining a
// real multi-rank job (Connect) needs the mpi build.
package mpi

import (
	"errors"
	"time"
)

// Available reports whether this build talks to a real MPI library.
const Available = false

// ErrNoMPI is returned by Connect in a build without the mpi tag.
var ErrNoMPI = errors.New("mpi: shardlab was built without MPI; rebuild with -tags mpi (needs libopenmpi-dev)")

// World is a job of one rank.
type World struct{}

// Init returns the one-rank job.
func Init() (*World, error) { return &World{}, nil }

// Rank is 0.
func (*World) Rank() int { return 0 }

// Size is 1.
func (*World) Size() int { return 1 }

// Finalize does nothing.
func (*World) Finalize() {}

// Barrier returns at once.
func (*World) Barrier() error { return nil }

// Allreduce over one rank leaves x as it is.
func (*World) Allreduce(x []float32) error { return nil }

// AllreduceMax over one rank leaves x as it is.
func (*World) AllreduceMax(x []float64) error { return nil }

// AllreduceSum64 over one rank leaves x as it is.
func (*World) AllreduceSum64(x []float64) error { return nil }

// Allgather over one rank is a copy of x.
func (*World) Allgather(x []float32) ([]float32, error) { return append([]float32(nil), x...), nil }

// ReduceScatter over one rank is a copy of x.
func (*World) ReduceScatter(x []float32) ([]float32, error) { return append([]float32(nil), x...), nil }

// Alltoall over one rank is a copy of x.
func (*World) Alltoall(x []float32) ([]float32, error) { return append([]float32(nil), x...), nil }

// GatherBytes over one rank is b alone.
func (*World) GatherBytes(b []byte) ([][]byte, error) { return [][]byte{b}, nil }

// Connect fails: there is no MPI in this build.
func Connect(hosts, perHost int, timeout time.Duration) (*Job, error) { return nil, ErrNoMPI }
