package fabric

import (
	"errors"
	"testing"

	"shardlab/collective"
)

func TestDiscoverNamesTheBrokenLink(t *testing.T) {
	f := New([]int{0, 0, 0, 0})
	f.FailLink(2, 1)
	g := collective.Group{Ranks: []int{0, 1, 2, 3}, NICI: 4, NDCN: 1}
	var down *ErrLinkDown
	if err := f.Discover([]collective.Group{g}); !errors.As(err, &down) || down.A != 1 || down.B != 2 {
		t.Errorf("Discover = %v, want link 1-2 down", err)
	}
}
