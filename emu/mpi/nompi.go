//go:build !mpi

// Package mpi is a thin cgo layer over Open MPI and the emulator's
// transport across processes (build tag mpi). This build has no MPI: it is
// the one-rank stand-in, so go test ./... needs no MPI library.
package mpi

import (
	"errors"
	"time"

	"shardlab/emu"
)

// Available reports whether this build talks to a real MPI library.
const Available = false

// ErrNoMPI is returned by Init in a build without the mpi tag.
var ErrNoMPI = errors.New("mpi: shardlab was built without MPI; rebuild with -tags mpi (needs libopenmpi-dev)")

// World is the one-rank job.
type World struct{}

// Init fails: there is no MPI in this build.
func Init() (*World, error) { return nil, ErrNoMPI }

// Rank is 0.
func (*World) Rank() int { return 0 }

// Size is 1.
func (*World) Size() int { return 1 }

// Finalize does nothing.
func (*World) Finalize() {}

// Transport stands in for the MPI transport; it is never created here.
type Transport struct{ Timeout time.Duration }

// NewTransport is unavailable without MPI.
func (*World) NewTransport(perHost int) *Transport { return &Transport{} }

// Attach does nothing.
func (*Transport) Attach(*emu.Fabric) {}

// Stop does nothing.
func (*Transport) Stop() {}
