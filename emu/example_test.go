package emu_test

import (
	"fmt"

	"shardlab/emu"
	"shardlab/mesh"
)

func ExampleTrain() {
	m, _ := mesh.ParseOn("v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2") // 8 virtual chips, 2 slices
	r, err := emu.Train(emu.TrainConfig{
		Model: emu.Config{Layers: 2, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8},
		Mesh:  m, GlobalBatch: 8, Steps: 5, Seed: 1, LR: 1e-2, Data: &emu.Synthetic{V: 32, Seed: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	dcn := r.Devices[0].Sent["all-reduce"][emu.DCN]
	fmt.Println(len(r.Devices), "chips; loss fell:", r.Losses[4] < r.Losses[0], "; DCN bytes of chip 0:", dcn)
	// Output:
	// 8 chips; loss fell: true ; DCN bytes of chip 0: 35360
}
