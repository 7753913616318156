package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"shardlab/internal/errtext"
	"shardlab/systolic"
	"shardlab/unit"
)

// maxSimFolds bounds the cycle-level simulation the CLI runs; past it only
// the closed form is shown. Simulate skips the steady state of each fold,
// so its cost grows with the folds (about 120 ns and 41 bytes each on the
// development machine: 1M folds in 0.12 s), not with the cycles; the bound
// used to be 50M cycles when every cycle cost O(rows + columns).
const maxSimFolds = 1 << 20

type mxuFlags struct {
	m, k, n                         *int
	array, dataflow, tpu, tracePath *string
	compat                          *string
	double, hbm, asJSON             *bool
	buffer                          *int64
	cpuGHz, gpuGHz                  *float64 // compare
	gpuALUs, tile                   *int     // compare
}

// gemmFlags defines --m, --k and --n.
func gemmFlags(fs *flag.FlagSet, f *mxuFlags) {
	f.m = newInt(fs, "m", 4096, 1, systolic.MaxDim, "", "GEMM rows of A and C")
	f.k = newInt(fs, "k", 4096, 1, systolic.MaxDim, "", "GEMM inner dimension")
	f.n = newInt(fs, "n", 4096, 1, systolic.MaxDim, "", "GEMM columns of B and C")
}

func newMXUFlags() (*flag.FlagSet, *mxuFlags) {
	fs := flag.NewFlagSet("mxu", flag.ContinueOnError)
	var f mxuFlags
	gemmFlags(fs, &f)
	f.array = fs.String("array", "", "array size ROWSxCOLS (default: the --tpu chip's MXU)")
	f.dataflow = newChoice(fs, "dataflow", "ws", []string{"ws", "os", "is"}, parseDataflow, "ws (weight stationary), os (output stationary) or is (input stationary)")
	f.double = fs.Bool("double-buffer", true, "load the next fold's stationary tile while this one streams (ws, is)")
	f.tpu = fs.String("tpu", "v5p", "TPU generation or accelerator type (v5p, v5p-128): its clock, MXU size and HBM bandwidth")
	f.hbm = fs.Bool("hbm-limit", true, "limit HBM bandwidth to the chip's share per MXU (false: unlimited)")
	f.buffer = newInt64(fs, "buffer-mib", 0, 0, 1<<20, "0: unlimited", "on-chip operand buffer in MiB")
	f.compat = newChoice(fs, "compat", "shardlab", []string{"shardlab", "scalesim"}, parseCompat,
		"whose cycle count: shardlab (this simulator) or scalesim (SCALE-Sim v2's, quirks included: the whole array's fill and skew for every fold, one cycle less, no double buffering or HBM stalls)")
	f.tracePath = fs.String("trace", "", "write the per-cycle activity of a small GEMM as a Chrome/Perfetto trace to FILE")
	f.asJSON = fs.Bool("json", false, "print JSON")
	return fs, &f
}

func newMXUCompareFlags() (*flag.FlagSet, *mxuFlags) {
	fs := flag.NewFlagSet("mxu compare", flag.ContinueOnError)
	var f mxuFlags
	gemmFlags(fs, &f)
	f.tpu = fs.String("tpu", "v5p", "TPU generation or accelerator type")
	f.cpuGHz = newFloat(fs, "cpu-ghz", 3, floatFlag{lo: 0.01, hi: 100}, "CPU clock in GHz (one scalar MAC per cycle)")
	f.gpuALUs = newInt(fs, "gpu-alus", 5000, 1, 1<<20, "", "GPU ALUs (the seed: 2,500-5,000)")
	f.gpuGHz = newFloat(fs, "gpu-ghz", 1.5, floatFlag{lo: 0.01, hi: 100}, "GPU clock in GHz")
	f.tile = newInt(fs, "gpu-tile", 16, 1, 4096, "", "GPU shared-memory tile side")
	f.asJSON = fs.Bool("json", false, "print JSON")
	return fs, &f
}

func parseDataflow(s string) error { _, err := systolic.ParseDataflow(s); return err }

func parseCompat(s string) error { _, err := systolic.ParseCompat(s); return err }

func runMXU(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "compare" {
		return runMXUCompare(args[1:], stdout, stderr)
	}
	fs, f := newMXUFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tracePath := *f.tracePath
	compat, err := systolic.ParseCompat(*f.compat)
	if err != nil {
		return usageError{err}
	}
	if compat == systolic.CompatSCALESim && tracePath != "" {
		return bad("mxu: --trace %s traces shardlab's simulator; it cannot be combined with --compat scalesim", tracePath)
	}
	if tracePath != "" {
		if err := checkOutputFile("mxu: --trace", tracePath); err != nil {
			return err
		}
	}
	a, p, err := f.systolicArray(setFlags(fs), compat, stderr)
	if err != nil {
		return err
	}
	g := systolic.GEMM{M: *f.m, K: *f.k, N: *f.n}
	if err := g.Validate(); err != nil {
		return usageError{err}
	}
	cf, err := systolic.ClosedForm(a, g)
	if err != nil {
		return usageError{err}
	}
	if tracePath != "" {
		if err := writeMXUTrace(tracePath, a, g, cf.Cycles); err != nil {
			return err
		}
	}
	simulated := cf.Folds <= maxSimFolds && compat == systolic.CompatShardlab
	r := cf
	switch {
	case compat == systolic.CompatSCALESim:
		if r, err = systolic.SCALESim(a, g); err != nil {
			return err
		}
	case simulated:
		if r, err = systolic.Simulate(a, g); err != nil {
			return err
		}
	}
	if *f.asJSON {
		return writeJSON(stdout, mxuJSON(a, g, p, compat, simulated, r, cf))
	}
	return writeMXUText(stdout, a, g, p, compat, simulated, r, cf)
}

// systolicArray is the systolic array the flags describe, and the chip's
// preset; it warns of the flags that do not change the cycles counted.
func (f *mxuFlags) systolicArray(set map[string]bool, compat systolic.Compat, stderr io.Writer) (systolic.Array, systolic.Preset, error) {
	chip, _, err := parseTPU("--tpu", *f.tpu)
	if err != nil {
		return systolic.Array{}, systolic.Preset{}, err
	}
	p := systolic.PresetFor(chip)
	a := systolic.Array{Rows: p.Rows, Cols: p.Cols, ElementBytes: 2}
	if *f.array != "" {
		if a.Rows, a.Cols, err = systolic.ParseArray(*f.array); err != nil {
			rest, _ := errtext.After(errtext.Detail(err), *f.array)
			return a, p, bad("mxu: --array %q: %s", *f.array, rest)
		}
	}
	if a.Dataflow, err = systolic.ParseDataflow(*f.dataflow); err != nil {
		return a, p, bad("mxu: --dataflow: %s", errtext.Detail(err))
	}
	a.DoubleBuffer = *f.double
	scalesim := compat == systolic.CompatSCALESim
	switch {
	case set["double-buffer"] && a.Dataflow == systolic.OutputStationary:
		warn(stderr, "mxu", "--double-buffer has no effect with --dataflow os: output stationary keeps no stationary operand to preload")
	case set["double-buffer"] && scalesim:
		warn(stderr, "mxu", "--double-buffer does not change the cycles with --compat scalesim: SCALE-Sim overlaps nothing across folds (only shardlab's own figures printed beside them change)")
	}
	if set["hbm-limit"] && scalesim {
		warn(stderr, "mxu", "--hbm-limit does not change the cycles with --compat scalesim: SCALE-Sim counts no HBM stalls (only shardlab's own figures printed beside them change)")
	}
	a.BufferBytes = *f.buffer << 20
	if *f.hbm {
		a.HBMBytesPerCycle = p.HBMBytesPerCycle()
	}
	return a, p, nil
}

// writeMXUTrace writes a Perfetto trace of g on a to path.
func writeMXUTrace(path string, a systolic.Array, g systolic.GEMM, cycles int64) error {
	if cycles > systolic.MaxTraceCycles {
		// checked before the file is created, so an existing one is kept
		return bad("mxu: --trace %s: trace of %d cycles is too long (at most %d); try a smaller GEMM", path, cycles, systolic.MaxTraceCycles)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := systolic.WriteTrace(f, a, g); err != nil {
		f.Close()
		os.Remove(path)
		return usageError{err}
	}
	return f.Close()
}

func mxuJSON(a systolic.Array, g systolic.GEMM, p systolic.Preset, compat systolic.Compat, simulated bool, r, cf systolic.Result) map[string]any {
	return map[string]any{
		"gemm": map[string]int{"m": g.M, "k": g.K, "n": g.N}, "array": map[string]int{"rows": a.Rows, "cols": a.Cols},
		"dataflow": a.Dataflow, "double_buffer": a.DoubleBuffer, "simulated": simulated, "compat": compat,
		"cycles": r.Cycles, "closed_form_cycles": cf.Cycles, "stall_cycles": r.StallCycles, "hbm_stall_cycles": r.HBMStalls,
		"load_stall_cycles": r.LoadStalls, "folds": r.Folds, "macs": r.MACs, "utilization_fraction": r.Utilization(),
		"mapping_efficiency_fraction": systolic.MappingEfficiency(a.Dataflow, g, a.Rows, a.Cols),
		"buffer_accesses": map[string]int64{"a_reads": r.Buffer.AReads, "b_reads": r.Buffer.BReads,
			"c_writes": r.Buffer.CWrites, "c_reads": r.Buffer.CReads},
		"weight_reads_while_streaming": r.WeightReadsWhileStreaming,
		"hbm_read_bytes":               r.HBMReadBytes, "hbm_write_bytes": r.HBMWriteBytes,
		"hbm_bytes_per_cycle": a.HBMBytesPerCycle, "clock_hz": p.ClockHz, "time_one_mxu_s": float64(r.Cycles) / p.ClockHz,
	}
}

func writeMXUText(w io.Writer, a systolic.Array, g systolic.GEMM, p systolic.Preset, compat systolic.Compat, simulated bool, r, cf systolic.Result) error {
	mapping := systolic.MappingEfficiency(a.Dataflow, g, a.Rows, a.Cols)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GEMM\t%d x %d x %d (%d MACs)\n", g.M, g.K, g.N, g.MACs())
	fmt.Fprintf(tw, "array\t%dx%d, %s, double buffer %v (%s)\n", a.Rows, a.Cols, a.Dataflow, a.DoubleBuffer, p)
	how, cfName := "cycle-level simulation", "closed form"
	switch {
	case compat == systolic.CompatSCALESim:
		how = "SCALE-Sim v2's count (--compat scalesim: every fold pays the whole array's fill and skew, no double buffering or stalls, one cycle less)"
		cfName = "shardlab's closed form"
	case !simulated:
		how = fmt.Sprintf("closed form (simulation skipped above %d folds)", maxSimFolds)
	}
	fmt.Fprintf(tw, "cycles\t%d by %s; %s %d\n", r.Cycles, how, cfName, cf.Cycles)
	fmt.Fprintf(tw, "stalls\t%d (HBM %d, stationary load %d)\n", r.StallCycles, r.HBMStalls, r.LoadStalls)
	fmt.Fprintf(tw, "folds\t%d\n", r.Folds)
	fmt.Fprintf(tw, "utilization\t%.2f%% of %d MACs per cycle\n", 100*r.Utilization(), a.Rows*a.Cols)
	fmt.Fprintf(tw, "mapping efficiency\t%.2f%% (padding loss %.2f%%)\n", 100*mapping, 100*(1-mapping))
	fmt.Fprintf(tw, "buffer reads\tA %d, B %d, partial sums %d\n", r.Buffer.AReads, r.Buffer.BReads, r.Buffer.CReads)
	fmt.Fprintf(tw, "buffer writes\tC %d\n", r.Buffer.CWrites)
	fmt.Fprintf(tw, "weight reads while streaming\t%d\n", r.WeightReadsWhileStreaming)
	fmt.Fprintf(tw, "accesses per MAC\t%.4f\n", r.AccessesPerMAC())
	fmt.Fprintf(tw, "HBM traffic\tread %v, write %v (%.1f B/cycle available)\n", unit.Bytes(r.HBMReadBytes), unit.Bytes(r.HBMWriteBytes), a.HBMBytesPerCycle)
	fmt.Fprintf(tw, "time on one MXU\t%v at %.2f GHz\n", unit.Seconds(float64(r.Cycles)/p.ClockHz), p.ClockHz/1e9)
	return tw.Flush()
}

func runMXUCompare(args []string, stdout, stderr io.Writer) error {
	fs, f := newMXUCompareFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, k, n, tpu, cpuGHz, gpuALUs, gpuGHz, tile, asJSON := f.m, f.k, f.n, f.tpu, f.cpuGHz, f.gpuALUs, f.gpuGHz, f.tile, f.asJSON
	chip, _, err := parseTPU("--tpu", *tpu)
	if err != nil {
		return err
	}
	rows, err := systolic.Compare(systolic.GEMM{M: *m, K: *k, N: *n}, systolic.Machines{
		CPUClockHz: *cpuGHz * 1e9, GPUALUs: *gpuALUs, GPUClockHz: *gpuGHz * 1e9, GPUTile: *tile, TPU: systolic.PresetFor(chip)})
	if err != nil {
		return usageError{err}
	}
	if *asJSON {
		return writeJSON(stdout, map[string]any{
			"gemm": map[string]int{"m": *m, "k": *k, "n": *n}, "processors": rows})
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GEMM %d x %d x %d, %d MACs\n", *m, *k, *n, rows[0].MACs)
	fmt.Fprintln(tw, "processor\tALUs\tclock\taccesses per MAC\tmemory accesses\ttime\thow")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.2f GHz\t%.4f\t%.3g\t%v\t%s\n", r.Processor, r.ALUs, r.ClockHz/1e9, r.AccessesPerMAC, float64(r.MemoryAccesses), unit.Seconds(r.Seconds), r.How)
	}
	return tw.Flush()
}
