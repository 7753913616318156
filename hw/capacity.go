package hw

// Capacity topology: how Google Cloud groups a generation's chips below a
// cluster for All Capacity mode reservations.
//
// Sources:
//   - [ac-overview] https://docs.cloud.google.com/tpu/docs/all-capacity-overview:
//     All Capacity mode is "available on TPU v6e (Trillium) and TPU7x
//     (Ironwood) ... not supported for older TPU versions"; four levels:
//     cluster, block, sub-block, host.
//   - [gke-ac] https://docs.cloud.google.com/kubernetes-engine/docs/how-to/tpu-all-capacity-mode (TPU All Capacity
//     mode): TPU7x "a cube is a 4x4x4 topology of interconnected TPU
//     chips"; 1 host = 4 chips, 1 sub-block = 1 cube = 64 chips = 16 hosts,
//     1 block = 144 sub-blocks = 9,216 chips.

// CapacityTopology is one generation's sub-block and block sizes.
type CapacityTopology struct {
	// SubBlock is the ICI shape of one sub-block (TPU7x: one cube).
	SubBlock Topology
	// SubBlocksPerBlock is the sub-blocks one block holds.
	SubBlocksPerBlock int
	Source            string
}

// capacityTopologies holds the generations whose sizes are transcribed.
// v6e's rows of [ac-overview]'s table are not (its physical host there
// holds 8 chips, where the ct6e-standard-4t VM holds 4).
var capacityTopologies = map[Generation]CapacityTopology{
	TPU7x: {SubBlock: Topology{4, 4, 4}, SubBlocksPerBlock: 144,
		Source: "gke-ac: TPU7x sub-block = one 4x4x4 cube (64 chips, 16 hosts); block = 144 sub-blocks (9,216 chips)"},
}

// CapacityTopologyOf returns g's sub-block and block sizes, and false when
// they are not transcribed.
func CapacityTopologyOf(g Generation) (CapacityTopology, bool) {
	t, ok := capacityTopologies[g]
	return t, ok
}

// AllCapacityGenerations are the generations All Capacity mode exists on
// [ac-overview].
func AllCapacityGenerations() []Generation { return []Generation{V6e, TPU7x} }
