package emu_test

import (
	"errors"
	"testing"

	"shardlab/collective"
	"shardlab/collective/collectivetest"
	"shardlab/emu"
)

func TestInProcessConformance(t *testing.T) {
	collectivetest.Run(t, func(t *testing.T, sliceOf []int) []collective.Comm {
		f := emu.NewFabric(sliceOf)
		out := make([]collective.Comm, len(sliceOf))
		for i := range out {
			out[i] = f.Endpoint(i)
		}
		return out
	})
}

func TestDiscoverNamesTheBrokenLink(t *testing.T) {
	f := emu.NewFabric([]int{0, 0, 0, 0})
	f.FailLink(2, 1)
	g := collective.Group{Ranks: []int{0, 1, 2, 3}, NICI: 4, NDCN: 1}
	var down *emu.ErrLinkDown
	if err := f.Discover([]collective.Group{g}); !errors.As(err, &down) || down.A != 1 || down.B != 2 {
		t.Errorf("Discover = %v, want link 1-2 down", err)
	}
}
