package inference

import (
	"fmt"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/unit"
)

// replicaCost is what one device of a tp-way replica offers and holds,
// the terms every step time here is built from: the device's share of
// its chip's MXU peak and HBM bandwidth, the weights it reads each step,
// and the ICI ring its tensor-parallel all-reduces run on. Estimate's
// rooflines and Simulate's steps both use it.
type replicaCost struct {
	m     model.Spec
	tp    int
	peak  float64 // bf16 FLOP/s of one device
	bw    float64 // HBM bytes/s of one device
	chips int     // chips of the replica: the all-reduce's ring
	link  collective.Link
}

// newReplicaCost builds the cost terms of one tp-way replica on r's
// slice. tp must be one of TPSizes(r.Model, r.Slice); anything else is a
// bug and panics.
func newReplicaCost(r Request, tp int) replicaCost {
	c := r.Slice.Chip
	per := c.JAXDevicesPerChip
	rc := replicaCost{m: r.Model, tp: tp, peak: float64(c.PeakBF16) / float64(per), bw: float64(c.HBMBandwidth) / float64(per),
		chips: ceilDiv(tp, per), link: collective.Link{HopLatency: hw.ICIHopLatency}}
	if rc.chips > 1 {
		// the ICI ring of a TP group is where package mesh places a
		// tensor axis of that many chips on the slice
		ms, err := hw.NewMultislice(r.Slice, 1, 0)
		if err == nil {
			var m mesh.Mesh
			m, err = mesh.New(ms, mesh.Degree{Axis: mesh.Tensor, ICI: rc.chips, DCN: 1}, mesh.Degree{Axis: mesh.Data, ICI: r.Slice.Chips() / rc.chips, DCN: 1})
			if err == nil {
				rc.link = m.Link(mesh.Tensor).Collective()
			}
		}
		if err != nil {
			panic(fmt.Sprintf("inference: TP %d is not one of TPSizes on %s: %v", tp, r.Slice.AcceleratorType(), err))
		}
	}
	return rc
}

// allReduce is the tensor-parallel all-reduces of one forward pass over
// tokens tokens: two per layer, after the attention output and the MLP
// down projection, of the bf16 residual stream; the devices of one chip
// share its HBM, so only the chips of the replica pass over ICI.
func (rc replicaCost) allReduce(tokens int) time.Duration {
	size := tokens * rc.m.DModel * 2
	return time.Duration(2*rc.m.Layers) * collective.Time(collective.AllReduce, rc.chips, unit.Bytes(size), rc.link)
}
