package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/hw"
	"shardlab/infeed"
	"shardlab/unit"
)

// assumedVCPUsPerChip stands in for the vCPU count of a VM whose count is
// not published (v2, v3, v4): a round placeholder, not a measurement, and
// the report says so.
const assumedVCPUsPerChip = 4

func runInfeed(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("infeed", flag.ContinueOnError)
	tpu := fs.String("tpu", "tpu7x", "TPU generation: its VM sets the chips, vCPUs, NUMA nodes and PCIe bandwidth")
	vcpus := fs.Int("vcpus", 0, "vCPUs preprocessing input (default: the VM's)")
	cost := fs.Duration("example-cost", 2*time.Millisecond, "CPU time to read and preprocess one example")
	jitter := fs.Float64("jitter", 0, "coefficient of variation of the example cost (log-normal)")
	batch := fs.Int("batch", 256, "examples per chip per step")
	exBytes := fs.Int64("example-bytes", 32<<10, "bytes of one example copied into HBM")
	compute := fs.Duration("compute", 50*time.Millisecond, "MXU time per step")
	paramLoad := fs.Duration("param-load", 0, "time to load the step's parameters from HBM into the MXU")
	drain := fs.Duration("drain", time.Millisecond, "host time to consume one result from the outfeed")
	numa := fs.String("numa", "local", "worker placement: local (each chip's NUMA node), interleaved, or node0")
	crossNUMA := fs.Float64("cross-numa", 1.3, "example cost factor when a worker feeds a chip on the other NUMA node")
	infeedDepth := fs.Int("infeed-depth", 2, "batches the infeed queue holds per chip")
	outfeedDepth := fs.Int("outfeed-depth", 2, "results the outfeed queue holds per chip")
	steps := fs.Int("steps", 50, "steps to simulate")
	seed := fs.Uint64("seed", 1, "seed for the example-cost jitter")
	sweep := fs.Bool("sweep", true, "find the fewest vCPUs that keep the chips busy")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	chip, err := hw.Lookup(*tpu)
	if err != nil {
		return err
	}
	c := infeed.ForChip(chip)
	// what the catalog's sources do not publish for this VM, and what
	// stands in for it
	// (assumedKeys names them as the JSON does)
	var assumed []string
	assumedKeys := []string{}
	if c.VCPUs == 0 {
		c.VCPUs = assumedVCPUsPerChip * c.Chips
		assumed = append(assumed, fmt.Sprintf("vCPUs (%d: shardlab's stand-in of %d per chip)", c.VCPUs, assumedVCPUsPerChip))
		assumedKeys = append(assumedKeys, "host_vcpus")
	}
	if chip.Host.NUMANodes == 0 {
		assumed = append(assumed, fmt.Sprintf("NUMA nodes (%d)", c.NUMANodes))
		assumedKeys = append(assumedKeys, "numa_nodes")
	}
	if chip.PCIe == 0 {
		assumed = append(assumed, fmt.Sprintf("PCIe (%v per chip: %s)", c.PCIe, infeed.AssumedPCIeSource))
		assumedKeys = append(assumedKeys, "pcie_bytes_per_s_per_chip")
	}
	vmVCPUs := c.VCPUs
	if *vcpus != 0 {
		c.VCPUs = *vcpus
	}
	if c.Placement, err = infeed.ParsePlacement(*numa); err != nil {
		return usageError{err}
	}
	c.ExampleCost, c.Jitter, c.Batch, c.ExampleBytes = *cost, *jitter, *batch, unit.Bytes(*exBytes)
	c.Compute, c.ParamLoad, c.Drain, c.CrossNUMA = *compute, *paramLoad, *drain, *crossNUMA
	c.InfeedDepth, c.OutfeedDepth, c.Steps, c.Seed = *infeedDepth, *outfeedDepth, *steps, *seed
	r, err := infeed.Run(c)
	if err != nil {
		return usageError{err}
	}
	var need int
	var needOK bool
	if *sweep {
		if need, _, needOK, err = infeed.MinVCPUs(c, 4096); err != nil {
			return err
		}
	}
	if *asJSON {
		out := map[string]any{
			"generation": chip.Generation, "machine_type": chip.Host.MachineType, "chips_per_host": c.Chips,
			"worker_vcpus": c.VCPUs, "host_vcpus": vmVCPUs, "numa_nodes": c.NUMANodes, "pcie_bytes_per_s_per_chip": c.PCIe,
			"assumed": assumedKeys, "placement": c.Placement, "batch_examples_per_chip": c.Batch, "example_cost_s": c.ExampleCost.Seconds(),
			"step_time_s": r.StepTime.Seconds(), "makespan_s": r.Makespan.Seconds(), "examples_per_s": r.ExamplesPerSecond,
			"busy": map[string]float64{"host_vcpus_fraction": r.HostBusy, "hbm_copy_fraction": r.CopyBusy, "mxu_fraction": r.MXUBusy,
				"outfeed_drain_fraction": r.DrainBusy},
			"mxu_stalls": map[string]float64{"infeed_empty_s": r.Stalls.InfeedEmpty.Seconds(), "hbm_copy_s": r.Stalls.HBMCopy.Seconds(),
				"outfeed_full_s": r.Stalls.OutfeedFull.Seconds()},
			"input_bound": r.InputBound(), "chips_busy": r.Busy(),
		}
		if *sweep {
			out["min_worker_vcpus"] = need
			out["min_worker_vcpus_found"] = needOK
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	vmHas := fmt.Sprintf("the VM has %d", vmVCPUs)
	vcpuNote, numaNote, pcieNote := "", "", ""
	if chip.Host.VCPUs == 0 {
		vmHas = fmt.Sprintf("the VM is assumed to have %d", vmVCPUs)
		vcpuNote = " (assumed)"
	}
	if chip.Host.NUMANodes == 0 {
		numaNote = " (assumed)"
	}
	if chip.PCIe == 0 {
		pcieNote = " (assumed)"
	}
	fmt.Fprintf(tw, "host\t%s (%s): %s, %d of %s%s, %s%s, workers %s\n", chip.Name, chip.Host.MachineType, unit.Plural(c.Chips, "chip"),
		c.VCPUs, unit.Plural(vmVCPUs, "vCPU"), vcpuNote, unit.Plural(c.NUMANodes, "NUMA node"), numaNote, c.Placement)
	if len(assumed) > 0 {
		fmt.Fprintf(tw, "assumed\tnot published for %s in the catalog's sources: %s\n", chip.Host.MachineType, strings.Join(assumed, "; "))
	}
	fmt.Fprintf(tw, "input\t%s per chip per step at %v each (jitter %.2f), %v per example over %v PCIe%s\n", unit.Plural(c.Batch, "example"),
		unit.Seconds(c.ExampleCost.Seconds()), c.Jitter, c.ExampleBytes, c.PCIe, pcieNote)
	fmt.Fprintf(tw, "MXU\t%v parameter load + %v compute per step; outfeed drained in %v\n", unit.Seconds(c.ParamLoad.Seconds()),
		unit.Seconds(c.Compute.Seconds()), unit.Seconds(c.Drain.Seconds()))
	fmt.Fprintf(tw, "step time\t%v steady state over %s (%v in all)\n", unit.Seconds(r.StepTime.Seconds()), unit.Plural(c.Steps, "step"),
		unit.Seconds(r.Makespan.Seconds()))
	fmt.Fprintf(tw, "throughput\t%.0f examples/s for the host\n", r.ExamplesPerSecond)
	fmt.Fprintf(tw, "busy\thost vCPUs %.1f%%, HBM copy %.1f%%, MXU %.1f%%, outfeed drain %.1f%%\n", 100*r.HostBusy, 100*r.CopyBusy, 100*r.MXUBusy, 100*r.DrainBusy)
	fmt.Fprintf(tw, "MXU stalls\tinfeed empty %v, HBM copy %v, outfeed full %v\n", unit.Seconds(r.Stalls.InfeedEmpty.Seconds()),
		unit.Seconds(r.Stalls.HBMCopy.Seconds()), unit.Seconds(r.Stalls.OutfeedFull.Seconds()))
	verdict := "the MXU is the bottleneck: input keeps up"
	switch {
	case r.Stalls.OutfeedFull > r.Makespan/20:
		verdict = "the outfeed fills: the host drains results too slowly and the ready MXU waits"
	case r.InputBound():
		verdict = "input-bound: the host does not keep the infeed full and the ready MXU waits"
	}
	fmt.Fprintf(tw, "verdict\t%s\n", verdict)
	if *sweep {
		if needOK {
			fmt.Fprintf(tw, "vCPUs needed\t%d per host (%.1f per chip) to keep the chips busy; %s\n", need, float64(need)/float64(c.Chips), vmHas)
		} else {
			fmt.Fprintf(tw, "vCPUs needed\tmore than %d per host: the chips stay input-bound\n", need)
		}
	}
	return tw.Flush()
}
