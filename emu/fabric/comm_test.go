package fabric_test

import (
	"testing"

	"shardlab/collective"
	"shardlab/collective/collectivetest"
	"shardlab/emu/fabric"
)

func TestInProcessConformance(t *testing.T) {
	collectivetest.Run(t, func(t *testing.T, sliceOf []int) []collective.Comm {
		f := fabric.New(sliceOf)
		out := make([]collective.Comm, len(sliceOf))
		for i := range out {
			out[i] = f.Endpoint(i)
		}
		return out
	})
}
