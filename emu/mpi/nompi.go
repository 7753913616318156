//go:build !mpi

// Package mpi is a thin cgo layer over Open MPI and the emulator's
// transport across processes (build tag mpi). This build has no MPI: it is
// the one-rank stand-in, so go test ./... needs no MPI library.
package mpi

import "errors"

// Available reports whether this build talks to a real MPI library.
const Available = false

// ErrNoMPI is returned by Init in a build without the mpi tag.
var ErrNoMPI = errors.New("mpi: shardlab was built without MPI; rebuild with -tags mpi (needs libopenmpi-dev)")

// Connect fails: there is no MPI in this build.
func Connect(hosts, perHost int) (*Job, error) { return nil, ErrNoMPI }
