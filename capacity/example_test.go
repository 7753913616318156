package capacity_test

import (
	"fmt"
	"os"
	"time"

	"shardlab/capacity"
	"shardlab/hw"
)

// Place eight 128-chip TPU7x slices on one All Capacity block with two
// spare sub-blocks, and simulate 30 days.
func ExampleRun() {
	s, _ := hw.ParseTPU("tpu7x-256")
	r, err := capacity.New(s.Chip, capacity.AllCapacity, 1, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := capacity.Place(r, s, 8, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := capacity.Run(p, capacity.Config{
		ChipFailuresPerHour: capacity.DefaultChipFailuresPerHour,
		Repair:              capacity.DefaultRepair, Recovery: capacity.DefaultRecovery, Startup: capacity.DefaultStartup,
		Save: time.Minute, Restore: time.Minute, Interval: time.Hour,
		Horizon: 30 * 24 * time.Hour, Seed: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d sub-blocks used, %d spare; goodput %.3f\n", p.Used, p.Spare, res.Goodput())
	// Output: 16 sub-blocks used, 128 spare; goodput 0.961
}

func ExamplePlacement_WriteText() {
	s, _ := hw.ParseTPU("tpu7x-1024") // 512 chips: 8 sub-blocks
	r, _ := capacity.New(s.Chip, capacity.Managed, 1, 0.05)
	p, err := capacity.Place(r, s, 2, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	p.WriteText(os.Stdout)
	// Output:
	// reservation: 1 block of 144 sub-blocks (4x4x4, 64 chips, 16 hosts each), 9216 chips, managed mode
	// job: 2 x tpu7x-1024 (8x8x8, 8 sub-blocks each), 2 slices over 1 block, DCN between slices
	//   block 0 sub-blocks 0-7: slice 0
	//   block 0 sub-blocks 8-15: slice 1
	// held back by Compute Engine: 8 sub-blocks (5.0 %, an assumption: the docs publish no holdback)
	// spare: 120 sub-blocks, 0 of them set aside for this job
}

// Find the checkpoint interval with the best mean goodput over eight
// seeds, on a grid around Daly's interval, for eight 128-chip TPU7x
// slices with a one-minute checkpoint.
func ExampleOptimize() {
	s, _ := hw.ParseTPU("tpu7x-256")
	r, _ := capacity.New(s.Chip, capacity.AllCapacity, 1, 0)
	p, err := capacity.Place(r, s, 8, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := capacity.Config{
		ChipFailuresPerHour: capacity.DefaultChipFailuresPerHour,
		Repair:              capacity.DefaultRepair, Recovery: capacity.DefaultRecovery, Startup: capacity.DefaultStartup,
		Save: time.Minute, Restore: time.Minute, Interval: time.Hour,
		Horizon: 30 * 24 * time.Hour, Seed: 1,
	}
	_, daly := capacity.Intervals(p, cfg)
	o, err := capacity.Optimize(p, cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Daly %v; grid %v to %v; optimum %v, goodput %.3f, edge %q\n", daly.Round(time.Second), o.Low.Round(time.Second),
		o.High.Round(time.Second), o.Interval.Round(time.Second), o.Goodput, o.Edge)
	// Output: Daly 1h16m24s; grid 9m33s to 10h11m11s; optimum 1h36m15s, goodput 0.963, edge ""
}
