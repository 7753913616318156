//go:build !mpi

package mpi

import (
	"errors"
	"testing"
	"time"
)

func TestOneRankStandIn(t *testing.T) {
	w, err := Init()
	if err != nil || w.Rank() != 0 || w.Size() != 1 || Available {
		t.Fatalf("Init = %v, %v", w, err)
	}
	x := []float32{1, 2}
	if err := w.Allreduce(x); err != nil || x[0] != 1 {
		t.Errorf("Allreduce over one rank changed %v", x)
	}
	if g, _ := w.Allgather(x); len(g) != 2 {
		t.Errorf("Allgather = %v", g)
	}
	if _, err := Connect(2, 4, time.Minute); !errors.Is(err, ErrNoMPI) {
		t.Errorf("Connect = %v, want ErrNoMPI", err)
	}
}
