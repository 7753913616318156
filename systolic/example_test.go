package systolic_test

import (
	"fmt"

	"shardlab/hw"
	"shardlab/systolic"
)

func ExampleClosedForm() {
	r, _ := systolic.ClosedForm(systolic.Array{Rows: 128, Cols: 128, Dataflow: systolic.WeightStationary}, systolic.GEMM{M: 4096, K: 4096, N: 4096})
	fmt.Printf("%d folds, %d cycles, %.1f%% utilization\n", r.Folds, r.Cycles, 100*r.Utilization())
	// Output:
	// 1024 folds, 4585472 cycles, 91.5% utilization
}

func ExampleCompare() {
	v5p, _ := hw.Lookup("v5p")
	rows, _ := systolic.Compare(systolic.GEMM{M: 1024, K: 1024, N: 1024},
		systolic.Machines{CPUClockHz: 3e9, GPUALUs: 5000, GPUClockHz: 1.5e9, GPUTile: 16, TPU: systolic.PresetFor(v5p)})
	for _, r := range rows {
		fmt.Printf("%s: %.3f accesses per MAC\n", r.Processor, r.AccessesPerMAC)
	}
	// Output:
	// CPU (scalar von Neumann core): 4.000 accesses per MAC
	// GPU (SIMT ALUs): 3.125 accesses per MAC
	// TPU MXU (TPU v5p): 0.023 accesses per MAC
}

func ExampleSCALESim() {
	a := systolic.Array{Rows: 128, Cols: 128, Dataflow: systolic.WeightStationary}
	g := systolic.GEMM{M: 64, K: 64, N: 64}
	scaleSim, _ := systolic.SCALESim(a, g)
	own, _ := systolic.ClosedForm(a, g)
	fmt.Printf("SCALE-Sim v2: %d cycles; shardlab: %d cycles\n", scaleSim.Cycles, own.Cycles)
	// Output:
	// SCALE-Sim v2: 445 cycles; shardlab: 254 cycles
}
