package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/hw"
	"shardlab/infeed"
	"shardlab/unit"
)

type infeedFlags struct {
	tpu, numa                                      *string
	vcpus, batch, infeedDepth, outfeedDepth, steps *int
	cost, compute, paramLoad, drain                *time.Duration
	jitter, crossNUMA                              *float64
	exBytes                                        *int64
	seed                                           *uint64
	sweep, asJSON                                  *bool
}

func newInfeedFlags() (*flag.FlagSet, *infeedFlags) {
	fs := flag.NewFlagSet("infeed", flag.ContinueOnError)
	var f infeedFlags
	f.tpu = fs.String("tpu", "tpu7x", "TPU generation or accelerator type: its host VM sets the chips, vCPUs, NUMA nodes and PCIe bandwidth")
	f.vcpus = newInt(fs, "vcpus", 0, 0, 4096, "0: the VM's", "vCPUs preprocessing input, at most the VM's")
	f.cost = newDuration(fs, "example-cost", 2*time.Millisecond, 0, time.Hour, "", "CPU time to read and preprocess one example")
	f.jitter = newFloat(fs, "jitter", 0, floatFlag{lo: 0, hi: 10}, "coefficient of variation of the example cost (log-normal)")
	f.batch = newInt(fs, "batch", 256, 1, 1<<20, "", "examples per chip per step (steps x batch x chips: at most 10 million examples, 1 million with --sweep)")
	f.exBytes = newInt64(fs, "example-bytes", 32<<10, 0, 1<<30, "", "bytes of one example copied into HBM")
	f.compute = newDuration(fs, "compute", 50*time.Millisecond, time.Nanosecond, time.Hour, "", "MXU time per step")
	f.paramLoad = newDuration(fs, "param-load", 0, 0, time.Hour, "", "time to load the step's parameters from HBM into the MXU")
	f.drain = newDuration(fs, "drain", time.Millisecond, 0, time.Hour, "", "host time to consume one result from the outfeed")
	f.numa = newChoice(fs, "numa", "local", []string{"local", "interleaved", "node0"}, nil, "worker placement: local (each chip's NUMA node), interleaved, or node0")
	f.crossNUMA = newFloat(fs, "cross-numa", 1.3, floatFlag{lo: 1, hi: 10}, "example cost factor when a worker feeds a chip on the other NUMA node")
	f.infeedDepth = newInt(fs, "infeed-depth", 2, 1, 1024, "", "batches the infeed queue holds per chip")
	f.outfeedDepth = newInt(fs, "outfeed-depth", 2, 1, 1024, "", "results the outfeed queue holds per chip")
	f.steps = newInt(fs, "steps", 50, infeed.MinMeasuredSteps, infeed.MaxSteps, "", "steps to simulate, the steady state measured over the second half (steps x batch x chips: at most 10 million examples, 1 million with --sweep)")
	f.seed = newUint64(fs, "seed", 1, 0, math.MaxUint64, "", "seed for the example-cost jitter")
	f.sweep = fs.Bool("sweep", true, "find the fewest vCPUs with which the host keeps up: that keep the chips busy, or past which only the HBM copy or the outfeed drain holds them\n(up to 24 more runs of the simulation: at most 1 million examples, steps x batch x chips)")
	f.asJSON = fs.Bool("json", false, "print JSON")
	return fs, &f
}

func runInfeed(args []string, stdout, stderr io.Writer) error {
	fs, f := newInfeedFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	chip, slice, err := parseTPU("--tpu", *f.tpu)
	if err != nil {
		return err
	}
	vm := hw.Slice{Chip: chip} // a generation alone: its Host VM
	if slice != nil {
		vm = *slice
	}
	host := vm.Host()
	if slice != nil && !slice.WholeHosts() {
		return bad("infeed: --tpu %s has %s, less than the %d-chip %s host this simulates; give a generation (%s) or a type of whole hosts",
			*f.tpu, unit.Plural(slice.Chips(), "chip"), host.Chips, host.MachineType, chip.Generation)
	}
	c := infeed.ForSlice(vm)
	vmVCPUs := c.VCPUs
	if *f.vcpus > vmVCPUs {
		assumed := ""
		if host.VCPUs == 0 {
			assumed = fmt.Sprintf(" (assumed: %d per chip, not published)", hw.AssumedVCPUsPerChip)
		}
		return bad("infeed: --vcpus %d is more than the %s VM's %d vCPUs%s; want 1 to %d, or 0 for all of them",
			*f.vcpus, host.MachineType, vmVCPUs, assumed, vmVCPUs)
	}
	if err := f.configure(&c, setFlags(fs), stderr); err != nil {
		return err
	}
	if err := checkInfeedWork(c, *f.sweep); err != nil {
		return err
	}
	var r infeed.Result
	var sw *infeed.Sweep
	if *f.sweep {
		var s infeed.Sweep
		r, s, err = infeed.SweepVCPUs(c, 4096)
		sw = &s
	} else {
		r, err = infeed.Run(c)
	}
	if err != nil {
		return infeedError(err)
	}
	if *f.asJSON {
		return writeJSON(stdout, infeedJSON(vm, c, r, vmVCPUs, sw))
	}
	return writeInfeed(stdout, vm, c, r, vmVCPUs, sw)
}

// infeedError is err with the Config fields an infeed.ConfigError names
// spelt as the flags that set them (example_bytes is --example-bytes),
// or in words where no flag does (hbm_buffers is HBM buffers); exit 2.
func infeedError(err error) error {
	var ce *infeed.ConfigError
	if errors.As(err, &ce) {
		return usageError{errors.New(ce.Phrase(infeedField))}
	}
	return usageError{err}
}

// infeedFields are the infeed.Config fields no flag of the same name
// sets, as the command's errors name them.
var infeedFields = map[string]string{"placement": "--numa", "chips": "chips",
	"numa_nodes": "NUMA nodes", "pcie": "PCIe bandwidth", "hbm": "HBM", "hbm_buffers": "HBM buffers"}

// infeedField names Config field key as the command does: its flag, or
// infeedFields' words.
func infeedField(key string) string {
	if s, ok := infeedFields[key]; ok {
		return s
	}
	return "--" + strings.ReplaceAll(key, "_", "-")
}

// The most examples (steps x batch x chips) the command simulates: the
// simulation handles one event per example, at some 100-250 ns each, and
// the sweep (infeed.MinVCPUs up to 4096 vCPUs: doubling from 1 or 2, then
// bisecting) runs it up to 24 more times. Both bounds keep every accepted
// command to seconds; package infeed itself accepts 50 million.
const (
	maxInfeedExamples = 10_000_000
	maxSweepExamples  = 1_000_000
)

// checkInfeedWork refuses a run that would take more than seconds.
func checkInfeedWork(c infeed.Config, sweep bool) error {
	n := int64(c.Steps) * int64(c.Batch) * int64(c.Chips)
	switch {
	case sweep && n > maxSweepExamples:
		return bad("infeed: --steps %d x --batch %d x %d chips = %d examples, want at most %d with --sweep (it runs the simulation up to 24 more times); give fewer, or --sweep=false (at most %d)",
			c.Steps, c.Batch, c.Chips, n, maxSweepExamples, maxInfeedExamples)
	case n > maxInfeedExamples:
		return bad("infeed: --steps %d x --batch %d x %d chips = %d examples, want at most %d", c.Steps, c.Batch, c.Chips, n, maxInfeedExamples)
	}
	return nil
}

// configure applies the flags to the host model c.
func (f *infeedFlags) configure(c *infeed.Config, set map[string]bool, stderr io.Writer) error {
	var err error
	if *f.vcpus != 0 {
		c.VCPUs = *f.vcpus
	}
	if c.Placement, err = infeed.ParsePlacement(*f.numa); err != nil {
		return infeedError(err)
	}
	if set["cross-numa"] && (c.Placement == infeed.Local || c.NUMANodes == 1) {
		warn(stderr, "infeed", "--cross-numa has no effect: no worker feeds a chip on another NUMA node (%s placement, %d NUMA nodes)", c.Placement, c.NUMANodes)
	}
	if set["seed"] && *f.jitter == 0 {
		warn(stderr, "infeed", "--seed has no effect without --jitter: example costs are fixed")
	}
	c.ExampleCost, c.Jitter, c.Batch, c.ExampleBytes = *f.cost, *f.jitter, *f.batch, unit.Bytes(*f.exBytes)
	c.Compute, c.ParamLoad, c.Drain, c.CrossNUMA = *f.compute, *f.paramLoad, *f.drain, *f.crossNUMA
	c.InfeedDepth, c.OutfeedDepth, c.Steps, c.Seed = *f.infeedDepth, *f.outfeedDepth, *f.steps, *f.seed
	return nil
}

// infeedAssumed lists what the catalog's sources do not publish for the
// slice's VM (vm.Host) and what stands in for it, in words and as the JSON
// keys.
func infeedAssumed(vm hw.Slice, c infeed.Config, vmVCPUs int) (words, keys []string) {
	chip, host := vm.Chip, vm.Host()
	keys = []string{}
	if host.VCPUs == 0 {
		words = append(words, fmt.Sprintf("vCPUs (%d: shardlab's stand-in of %d per chip)", vmVCPUs, hw.AssumedVCPUsPerChip))
		keys = append(keys, "host_vcpus")
	}
	if host.NUMANodes == 0 {
		words = append(words, fmt.Sprintf("NUMA nodes (%d)", c.NUMANodes))
		keys = append(keys, "numa_nodes")
	}
	if chip.PCIe == 0 {
		words = append(words, fmt.Sprintf("PCIe (%v per chip: %s)", c.PCIe, "the scaling book's v4 and v5p figure"))
		keys = append(keys, "pcie_bytes_per_s_per_chip")
	}
	return words, keys
}

func infeedJSON(vm hw.Slice, c infeed.Config, r infeed.Result, vmVCPUs int, sw *infeed.Sweep) map[string]any {
	chip, host := vm.Chip, vm.Host()
	_, assumedKeys := infeedAssumed(vm, c, vmVCPUs)
	out := map[string]any{
		"generation": chip.Generation, "machine_type": host.MachineType, "chips_per_host": c.Chips,
		"worker_vcpus": c.VCPUs, "host_vcpus": vmVCPUs, "numa_nodes": c.NUMANodes, "pcie_bytes_per_s_per_chip": c.PCIe,
		"assumed": assumedKeys, "placement": c.Placement, "batch_examples_per_chip": c.Batch, "example_cost_s": c.ExampleCost.Seconds(),
		"step_time_s": r.StepTime.Seconds(), "makespan_s": r.Makespan.Seconds(), "examples_per_s": r.ExamplesPerSecond,
		"busy": map[string]float64{"host_vcpus_fraction": r.HostBusy, "hbm_copy_fraction": r.CopyBusy, "mxu_fraction": r.MXUBusy,
			"outfeed_drain_fraction": r.DrainBusy},
		"mxu_stalls": map[string]float64{"infeed_empty_s": r.Stalls.InfeedEmpty.Seconds(), "hbm_copy_s": r.Stalls.HBMCopy.Seconds(),
			"outfeed_full_s": r.Stalls.OutfeedFull.Seconds()},
		"mxu_stalls_per_step": map[string]float64{"infeed_empty_s": r.StepStalls.InfeedEmpty.Seconds(), "hbm_copy_s": r.StepStalls.HBMCopy.Seconds(),
			"outfeed_full_s": r.StepStalls.OutfeedFull.Seconds()},
		"bound": r.Bound(), "input_bound": r.InputBound(), "chips_busy": r.Busy(), "steady_state": r.Steady(),
	}
	if sw != nil {
		out["min_worker_vcpus"] = sw.VCPUs
		out["min_worker_vcpus_found"] = sw.Found
	}
	return out
}

func writeInfeed(w io.Writer, vm hw.Slice, c infeed.Config, r infeed.Result, vmVCPUs int, sw *infeed.Sweep) error {
	chip, host := vm.Chip, vm.Host()
	assumed, _ := infeedAssumed(vm, c, vmVCPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	vmHas := fmt.Sprintf("the VM has %d", vmVCPUs)
	vcpuNote, numaNote, pcieNote := "", "", ""
	if host.VCPUs == 0 {
		vmHas = fmt.Sprintf("the VM is assumed to have %d", vmVCPUs)
		vcpuNote = " (assumed)"
	}
	if host.NUMANodes == 0 {
		numaNote = " (assumed)"
	}
	if chip.PCIe == 0 {
		pcieNote = " (assumed)"
	}
	fmt.Fprintf(tw, "host\t%s (%s): %s, %d of %s%s, %s%s, workers %s\n", chip.Name, host.MachineType, unit.Plural(c.Chips, "chip"),
		c.VCPUs, unit.Plural(vmVCPUs, "vCPU"), vcpuNote, unit.Plural(c.NUMANodes, "NUMA node"), numaNote, c.Placement)
	if len(assumed) > 0 {
		fmt.Fprintf(tw, "assumed\tnot published for %s in the catalog's sources: %s\n", host.MachineType, strings.Join(assumed, "; "))
	}
	fmt.Fprintf(tw, "input\t%s per chip per step at %v each (jitter %.2f), %v per example over %v PCIe%s\n", unit.Plural(c.Batch, "example"),
		unit.Seconds(c.ExampleCost.Seconds()), c.Jitter, c.ExampleBytes, c.PCIe, pcieNote)
	fmt.Fprintf(tw, "MXU\t%v parameter load + %v compute per step; outfeed drained in %v\n", unit.Seconds(c.ParamLoad.Seconds()),
		unit.Seconds(c.Compute.Seconds()), unit.Seconds(c.Drain.Seconds()))
	steady := "steady state"
	if !r.Steady() {
		b, period := c.Slowest()
		steady = "second half"
		fmt.Fprintf(tw, "step time\t%v over the second half of %s (%v in all): not the steady state, which is no shorter than the %s's %v a step; its queue had not filled (more steps reach it)\n",
			unit.Seconds(r.StepTime.Seconds()), unit.Plural(c.Steps, "step"), unit.Seconds(r.Makespan.Seconds()), stageName(b), unit.Seconds(period.Seconds()))
	} else {
		fmt.Fprintf(tw, "step time\t%v steady state over %s (%v in all)\n", unit.Seconds(r.StepTime.Seconds()), unit.Plural(c.Steps, "step"),
			unit.Seconds(r.Makespan.Seconds()))
	}
	fmt.Fprintf(tw, "throughput\t%s examples/s for the host\n", rate(r.ExamplesPerSecond))
	fmt.Fprintf(tw, "busy\thost vCPUs %.1f%%, HBM copy %.1f%%, MXU %.1f%%, outfeed drain %.1f%%\n", 100*r.HostBusy, 100*r.CopyBusy, 100*r.MXUBusy, 100*r.DrainBusy)
	fmt.Fprintf(tw, "MXU stalls\tinfeed empty %v, HBM copy %v, outfeed full %v\n", unit.Seconds(r.Stalls.InfeedEmpty.Seconds()),
		unit.Seconds(r.Stalls.HBMCopy.Seconds()), unit.Seconds(r.Stalls.OutfeedFull.Seconds()))
	fmt.Fprintf(tw, "a step\t%v of MXU work + waits: infeed empty %v, HBM copy %v, outfeed full %v (%s)\n",
		unit.Seconds((c.ParamLoad + c.Compute).Seconds()), unit.Seconds(r.StepStalls.InfeedEmpty.Seconds()),
		unit.Seconds(r.StepStalls.HBMCopy.Seconds()), unit.Seconds(r.StepStalls.OutfeedFull.Seconds()), steady)
	fmt.Fprintf(tw, "verdict\t%s\n", r.Bound().Verdict())
	if sw != nil {
		fmt.Fprintf(tw, "vCPUs needed\t%s\n", sweepLine(c, sw, vmHas))
	}
	return tw.Flush()
}

// sweepLine says what the sweep found: the vCPUs with which the host keeps
// up, and whether the chips are then busy or wait on another stage.
func sweepLine(c infeed.Config, sw *infeed.Sweep, vmHas string) string {
	if !sw.Found {
		return fmt.Sprintf("more than %d per host: the chips stay input-bound", sw.VCPUs)
	}
	perHost := fmt.Sprintf("%d per host (%.1f per chip)", sw.VCPUs, float64(sw.VCPUs)/float64(c.Chips))
	switch b := sw.Result.Bound(); b {
	case infeed.MXUBound:
		return fmt.Sprintf("%s to keep the chips busy; %s", perHost, vmHas)
	case infeed.CopyBound:
		return fmt.Sprintf("%s keep up with the chips, which then wait on the copy into HBM (more vCPUs do not help); %s", perHost, vmHas)
	default:
		return fmt.Sprintf("%s keep up with the chips, which then wait on the outfeed drain (more vCPUs do not help); %s", perHost, vmHas)
	}
}

// rate spells a throughput: whole numbers from 100 up, three significant
// digits below (0.284, not 0).
func rate(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// stageName names a fixed stage of the pipeline (infeed.Config.Slowest).
func stageName(b infeed.Bound) string {
	switch b {
	case infeed.CopyBound:
		return "HBM copy"
	case infeed.OutfeedBound:
		return "outfeed drain"
	}
	return "MXU"
}
