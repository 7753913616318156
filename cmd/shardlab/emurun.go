package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"shardlab/cost"
	"shardlab/emu"
	"shardlab/emu/mpi"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/unit"
)

// the default run: 8 virtual chips in two 4-chip v5e slices
const (
	defaultRunTPU    = "v5litepod-4"
	defaultRunSlices = 2
)

// defaultRunMesh is the default run's layout, data=2(dcn),fsdp=2,tensor=2
// as mesh spells it.
var defaultRunMesh = mesh.Spell([]mesh.Degree{{Axis: mesh.Data, ICI: 1, DCN: 2}, {Axis: mesh.FSDP, ICI: 2, DCN: 1}, {Axis: mesh.Tensor, ICI: 2, DCN: 1}})

type runFlags struct {
	tpu, meshSpec, planPath, sched, data, ckptDir, failLink, tracePath, killPoint *string
	slices, planIndex, layers, dModel, heads, kvHeads, dff, seq, batch, micro     *int
	chunks, experts, expertsPerToken, expertDFF, firstDense                       *int
	capacity                                                                      *float64
	steps, every, killRank, killStep                                              *int
	lr                                                                            *float64
	seed                                                                          *uint64
	tied, flash, bf16, synthetic, resume, asJSON, quiet, hang                     *bool
	mpiTimeout                                                                    *time.Duration
}

// newRunFlags defines the run flags. The model's sizes are bounded as
// emu.Config bounds them.
func newRunFlags() (*flag.FlagSet, *runFlags) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	f.tpu = fs.String("tpu", defaultRunTPU, "accelerator type of one slice, or a generation (v5litepod) for one host")
	f.slices = newInt(fs, "slices", defaultRunSlices, 1, 4096, "", "slices joined by DCN")
	f.meshSpec = fs.String("mesh", defaultRunMesh, "layout, e.g. "+defaultRunMesh)
	f.planPath = fs.String("plan", "", "take the layout, topology, global batch, micro-batches, schedule, chunks and (when the emulator runs it) sequence length\nfrom 'shardlab plan --json' output in FILE (at most 4 MiB)")
	f.planIndex = newInt(fs, "plan-index", 0, 0, 1023, "", "with --plan: which plan of the array 'shardlab plan --json' prints without model or TPU flags, from 0")
	f.layers = newInt(fs, "layers", 4, 1, maxRunLayers, "", "model layers (with --plan, and not given: the fewest from 4 that the plan's pipeline x chunks split)")
	f.dModel = newInt(fs, "d-model", 64, 1, 1<<16, "", "model width")
	f.heads = newInt(fs, "heads", 4, 1, 4096, "", "attention heads")
	f.kvHeads = newInt(fs, "kv-heads", 2, 1, 4096, "", "key/value heads")
	f.dff = newInt(fs, "d-ff", 176, 1, 1<<16, "", "MLP width")
	f.seq = newInt(fs, "seq", 64, 1, maxRunSeq, "", "sequence length")
	f.experts = newInt(fs, "experts", 0, 0, 1024, "0: a dense model", "routed experts of each mixture-of-experts layer (expert parallelism: --mesh "+mesh.Expert.String()+"=N)")
	f.expertsPerToken = newInt(fs, "experts-per-token", 2, 1, 1024, "", "with --experts: experts each token is routed to (top-k)")
	f.expertDFF = newInt(fs, "expert-d-ff", 0, 0, 1<<16, "0: --d-ff", "with --experts: each expert's MLP width")
	f.firstDense = newInt(fs, "first-dense-layers", 0, 0, 1023, "", "with --experts: layers at the start that keep a dense MLP")
	f.capacity = newFloat(fs, "capacity-factor", 0, floatFlag{lo: 0, hi: 64}, "with --experts: each expert takes at most this x tokens x k / experts of a chip's tokens, the rest dropped\n(MaxText's capacity_factor; 0: experts / k, which drops none)")
	f.tied = fs.Bool("tied", false, "tie the output projection to the embedding")
	f.flash = fs.Bool("flash-attention", false, "compute attention block by block with an online softmax, keeping each query's log-sum-exp\ninstead of the scores (cost's flash attention memory; the backward pass recomputes them, tile by tile)")
	f.batch = newInt(fs, "batch", 16, 1, 1<<20, "", "global batch in sequences")
	f.micro = newInt(fs, "micro-batches", 0, 0, 4096, "0: 2 per stage with a pipeline, else 1", "pipeline micro-batches")
	f.sched = newChoice(fs, "schedule", "1f1b", []string{"gpipe", "1f1b", "interleaved", "circular"}, parseSchedule, "pipeline schedule")
	f.chunks = newInt(fs, "chunks", 0, 0, plan.MaxChunks, "0: 2 for interleaved, else 1", "chunks of layers per pipeline device (interleaved; circular: MaxText num_pipeline_repeats)")
	f.steps = newInt(fs, "steps", 30, 1, 1_000_000, "", "training steps")
	f.lr = newFloat(fs, "lr", 3e-3, floatFlag{lo: 0, hi: 1, loOpen: true}, "Adam learning rate")
	f.bf16 = fs.Bool("bf16", true, "compute with bfloat16 copies of the weights; Adam keeps fp32 masters")
	f.seed = newUint64(fs, "seed", 1, 0, math.MaxUint64, "", "seed for the weights and the batches")
	f.data = fs.String("data", "", "text FILE (at most 256 MiB) or DIR of .go/.txt/.md files; the first 4 MiB are used (default: the Go sources under GOROOT)")
	f.synthetic = fs.Bool("synthetic", false, "train on synthetic sequences instead of text")
	f.ckptDir = fs.String("checkpoint", "", "write a checkpoint to DIR every --every steps")
	f.every = newInt(fs, "every", 10, 1, 1_000_000, "", "steps between checkpoints (needs --checkpoint)")
	f.resume = fs.Bool("resume", false, "continue from the checkpoint in --checkpoint DIR")
	f.failLink = fs.String("fail-link", "", "mark the link between devices A-B as down")
	f.tracePath = fs.String("trace", "", "write a Chrome/Perfetto trace (one track per virtual chip) to FILE")
	f.asJSON = fs.Bool("json", false, "print JSON")
	f.quiet = fs.Bool("quiet", false, "no progress bar")
	f.killRank = newInt(fs, "kill-rank", -1, -1, 4095, "-1: none", "fault injection under mpirun: this rank kills itself (SIGKILL) after --kill-step")
	f.killStep = newInt(fs, "kill-step", 0, 0, 1<<30, "", "the step after which --kill-rank dies")
	f.hang = fs.Bool("hang", false, "with --kill-rank: the rank hangs instead of dying")
	f.killPoint = newChoice(fs, "kill-point", "step", []string{"step", "write", "written"}, nil, "where --kill-rank dies: step (after --kill-step), write (partway through writing the first checkpoint at or after --kill-step), written (once that checkpoint is in place, before every rank has confirmed its own)")
	f.mpiTimeout = newDuration(fs, "mpi-timeout", 10*time.Minute, time.Second, 24*time.Hour, "", "under mpirun: how long a chip waits on a silent rank before the run stops, naming it")
	return fs, &f
}

// checkRunFlags refuses flags that would be ignored in the mode the others
// set, and output paths that could not be written, before any work.
func checkRunFlags(f *runFlags, set map[string]bool, stderr io.Writer) error {
	needs := func(flag, other string) error {
		return bad("run: --%s needs --%s", flag, other)
	}
	switch {
	case set["every"] && *f.ckptDir == "":
		return needs("every", "checkpoint DIR")
	case set["plan-index"] && *f.planPath == "":
		return needs("plan-index", "plan FILE")
	case set["data"] && *f.synthetic:
		return bad("run: --data and --synthetic both name the training data; give one")
	}
	if err := checkFaultFlags(f, set); err != nil {
		return err
	}
	switch {
	case *f.killRank >= 0 && !mpi.Launched():
		return bad("run: --kill-rank %d injects a fault into one MPI rank, but this is one process; start shardlab (built with -tags mpi) under mpirun", *f.killRank)
	case *f.killRank >= 0 && (*f.killStep < 1 || *f.killStep > *f.steps):
		return bad("run: --kill-step %d, want a step from 1 to --steps %d for --kill-rank to die after", *f.killStep, *f.steps)
	}
	for _, name := range []string{"experts-per-token", "expert-d-ff", "first-dense-layers", "capacity-factor"} {
		if set[name] && !set["experts"] {
			return needs(name, "experts N")
		}
	}
	if set["mpi-timeout"] && !mpi.Launched() {
		warn(stderr, "run", "--mpi-timeout has no effect outside mpirun")
	}
	if *f.failLink != "" {
		if _, err := parseLink(*f.failLink); err != nil {
			return err
		}
	}
	if *f.tracePath != "" {
		if err := checkOutputFile("run: --trace", *f.tracePath); err != nil {
			return err
		}
	}
	if *f.ckptDir != "" {
		if err := checkOutputDir("run: --checkpoint", *f.ckptDir); err != nil {
			return err
		}
	}
	return nil
}

// axisFactor spells axis a at size n in the layout syntax --mesh takes,
// as mesh spells it ("pipeline=4").
func axisFactor(a mesh.Axis, n int) string { return mesh.Degree{Axis: a, ICI: n, DCN: 1}.String() }

// pipelineSchedule reads --schedule and --chunks against the layout, the
// layers and the micro-batches: chunks only for interleaved (2 or more,
// default 2) and circular (default 1), a pipeline to run them on, layers
// that split into pipeline x chunks pieces and, for both, micro-batches
// in whole rounds of the stages.
func pipelineSchedule(name string, chunks int, m mesh.Mesh, layers, micro int) (schedule.Kind, int, error) {
	k, err := schedule.ParseKind(name)
	if err != nil {
		return "", 0, usageError{err}
	}
	p, v := m.Size(mesh.Pipeline), chunksOf(k, chunks)
	switch {
	case v > 1 && !k.Chunked():
		return "", 0, bad("run: --chunks %d with --schedule %s, want 1 (interleaved and circular split a device's layers into chunks)", chunks, k)
	case k == schedule.Interleaved && v < 2:
		return "", 0, bad("run: --chunks %d with --schedule interleaved, want 2 to %d (1 chunk is 1f1b)", chunks, plan.MaxChunks)
	case k.Chunked() && p == 1:
		return "", 0, bad("run: --schedule %s needs a pipeline, and layout %s has none; want gpipe or 1f1b, or a --mesh with %s or more", k, m, axisFactor(mesh.Pipeline, 2))
	case layers%(p*v) != 0:
		return "", 0, bad("run: --layers %d over %s x %s, want a multiple of %d layers", layers, axisFactor(mesh.Pipeline, p), unit.Plural(v, "chunk"), p*v)
	case k.Chunked() && micro%p != 0:
		return "", 0, bad("run: --micro-batches %d with --schedule %s over %s, want a multiple of %d", micro, k, axisFactor(mesh.Pipeline, p), p)
	}
	return k, v, nil
}

// chunksOf is the chunks per device that --chunks gives schedule k: 0 is
// 2 for interleaved, else 1.
func chunksOf(k schedule.Kind, chunks int) int {
	if chunks == 0 && k == schedule.Interleaved {
		return 2
	}
	return max(chunks, 1)
}

// parseLink reads --fail-link A-B: two different device numbers.
func parseLink(s string) ([2]int, error) {
	a, b, ok := strings.Cut(s, "-")
	x, err1 := strconv.Atoi(strings.TrimSpace(a))
	y, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil || x < 0 || y < 0:
		return [2]int{}, bad("run: --fail-link %q, want A-B with two device numbers, e.g. 3-4", s)
	case x == y:
		return [2]int{}, bad("run: --fail-link %q names one device twice, want A-B with two different devices, e.g. 3-4", s)
	}
	return [2]int{x, y}, nil
}

func runEmu(args []string, stdout, stderr io.Writer) error {
	fs, f := newRunFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := setFlags(fs)
	if err := checkRunFlags(f, set, stderr); err != nil {
		return err
	}
	m, err := f.layout(set, stderr)
	if err != nil {
		return err
	}
	tc, err := f.trainConfig(m)
	if err != nil {
		return err
	}
	// under mpirun: one rank per host, the chips of other hosts reached
	// through MPI; rank 0 reports
	job, err := f.connect(m)
	if err != nil {
		return err
	}
	if job != nil {
		defer job.Close()
		tc.Remote = job.Remote
		*f.quiet = *f.quiet || job.Rank != 0
	}
	flt := f.fault(job)
	if err := f.checkpointHooks(&tc, job, flt, stderr); err != nil {
		return err
	}
	// refuse a run that will not fit before allocating it, and hold the
	// collector to the estimate
	limit, err := checkRunMemory(tc)
	if err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	}
	wall := f.progressHook(&tc, flt, stderr)
	res, err := train(tc, job)
	if !*f.quiet && !*f.asJSON {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return f.failed(err, job, stderr)
	}
	return f.report(tc, res, *wall, job, stdout)
}

// failed is run's error for a training that failed with err. Under MPI a
// refused resume is said by every rank, which all wait for one another
// before exiting.
func (f *runFlags) failed(err error, job *mpi.Job, stderr io.Writer) error {
	var re *emu.ResumeError
	refused := errors.As(err, &re)
	processes := 1
	if job != nil {
		processes = job.Size
	}
	err = trainError(err, *f.ckptDir, processes)
	if job != nil && refused {
		// Every rank reaches this refusal together. Each says it, and
		// none exits before all have: mpirun ends the job when the first
		// rank exits non-zero, and a rank still writing would be cut off.
		fmt.Fprintf(stderr, "shardlab: %s\n", oneLine(err.Error()))
		if berr := job.Barrier(); berr != nil {
			return berr
		}
		return reportedError{err: err, code: exitUsage}
	}
	return err
}

// layout is the mesh to run: a plan's (whose batch, micro-batches,
// schedule and sequence length become the defaults of those flags), or
// --mesh on --tpu and --slices.
func (f *runFlags) layout(set map[string]bool, stderr io.Writer) (mesh.Mesh, error) {
	var m mesh.Mesh
	var err error
	if *f.planPath != "" {
		if set["mesh"] || set["tpu"] || set["slices"] {
			return m, bad("run: --plan gives the layout and topology; drop --mesh, --tpu and --slices")
		}
		var pj planJob
		if m, pj, err = meshFromPlan(*f.planPath, *f.planIndex, set["plan-index"]); err == nil {
			pj.apply(f, set, stderr)
			err = f.splitLayers(m, set, stderr)
		}
	} else {
		m, err = meshOn(*f.tpu, *f.slices, *f.meshSpec)
	}
	if err != nil {
		return m, err
	}
	if n := m.Size(mesh.Expert); n > 1 && *f.experts == 0 {
		return m, bad("run: the layout %s splits experts %d ways, and the emulated model is dense: give it experts with --experts N (a multiple of %d)", m, n, n)
	}
	if k, _ := schedule.ParseKind(*f.sched); set["schedule"] && !k.Chunked() && m.Size(mesh.Pipeline) == 1 {
		warn(stderr, "run", "--schedule has no effect: layout %s has no pipeline", m)
	}
	if m.Chips() > maxRunChips {
		return m, bad("run: the layout %s on %s has %d chips, more virtual chips than one run emulates (at most %d)", m, m.Multislice, m.Chips(), maxRunChips)
	}
	return m, nil
}

// trainConfig is the run the flags describe on m: the model, the data, the
// batch, its micro-batches and schedule, the failed link.
func (f *runFlags) trainConfig(m mesh.Mesh) (emu.TrainConfig, error) {
	var src emu.Source
	vocab := 256
	if *f.synthetic {
		src = &emu.Synthetic{V: vocab, Seed: *f.seed}
	} else {
		text, desc, err := loadCorpus(*f.data)
		if err != nil {
			return emu.TrainConfig{}, err
		}
		if src, err = emu.NewBytes(text, *f.seed, desc, *f.seq); err != nil {
			return emu.TrainConfig{}, usageError{err}
		}
	}
	mb := *f.micro
	if mb == 0 {
		mb = 1
		if p := m.Size(mesh.Pipeline); p > 1 {
			mb = 2 * p
		}
	}
	k, v, err := pipelineSchedule(*f.sched, *f.chunks, m, *f.layers, mb)
	if err != nil {
		return emu.TrainConfig{}, err
	}
	tc := emu.TrainConfig{
		Model: emu.Config{Layers: *f.layers, DModel: *f.dModel, Heads: *f.heads, KVHeads: *f.kvHeads, DFF: *f.dff, Vocab: vocab, Seq: *f.seq, Tied: *f.tied, FlashAttention: *f.flash,
			Experts: *f.experts},
		Mesh: m, GlobalBatch: *f.batch, MicroBatches: mb, Schedule: k, Chunks: v, Steps: *f.steps, Seed: *f.seed, LR: *f.lr, Data: src,
		BF16Compute: *f.bf16, Trace: *f.tracePath != "", GEMM: buildGEMM(),
		// the simulated clock runs at cost's calibrated share of peak
		Efficiency: cost.Job{}.EfficiencyFor(m.Multislice.Slice.Chip),
	}
	if e := *f.experts; e > 0 {
		k := *f.expertsPerToken
		tc.Model.ExpertsPerToken, tc.Model.ExpertDFF, tc.Model.FirstDenseLayers = k, *f.expertDFF, *f.firstDense
		if tc.Model.CapacityFactor = *f.capacity; tc.Model.CapacityFactor == 0 {
			tc.Model.CapacityFactor = float64(e) / float64(k)
		}
	}
	if *f.failLink != "" {
		l, err := parseLink(*f.failLink)
		if err != nil {
			return emu.TrainConfig{}, err
		}
		tc.FailLinks = [][2]int{l}
	}
	return tc, nil
}

// connect joins the MPI job when shardlab runs under mpirun (nil outside).
func (f *runFlags) connect(m mesh.Mesh) (*mpi.Job, error) {
	if !mpi.Launched() {
		return nil, nil
	}
	job, err := mpi.Connect(m.Multislice.Hosts(), m.Multislice.Slice.Host().Chips, *f.mpiTimeout)
	if err != nil {
		return nil, usageError{err}
	}
	if *f.killRank >= job.Size {
		job.Close()
		return nil, bad("run: --kill-rank %d, want a rank from 0 to %d", *f.killRank, job.Size-1)
	}
	return job, nil
}

// fault is the fault --kill-rank injects into one rank of an MPI job.
type fault struct {
	on    bool // this is the rank that fails
	point string
	step  int
	hang  bool
}

func (f *runFlags) fault(job *mpi.Job) fault {
	return fault{on: job != nil && job.Rank == *f.killRank, point: *f.killPoint, step: *f.killStep, hang: *f.hang}
}

// at reports whether the rank dies at point after step: at --kill-step
// itself for "step", at the first checkpoint from it on for the others.
func (ft fault) at(point string, step int) bool {
	return ft.on && ft.point == point && (step == ft.step || point != "step" && step > ft.step)
}

// die kills the process as a host failure would, with no chance to clean
// up.
func (fault) die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// checkFaultFlags refuses the fault-injection flags that would do
// nothing: --kill-step, --kill-point and --hang without --kill-rank, a
// kill while writing a checkpoint without --checkpoint, and --hang at a
// checkpoint (a rank hangs after a step only; at a checkpoint it dies).
func checkFaultFlags(f *runFlags, set map[string]bool) error {
	var given []string
	for _, name := range []string{"kill-step", "kill-point", "hang"} {
		if set[name] {
			given = append(given, "--"+name)
		}
	}
	switch {
	case len(given) > 0 && *f.killRank < 0:
		verb := "needs"
		if len(given) > 1 {
			verb = "need"
		}
		return bad("run: %s %s --kill-rank", strings.Join(given, " and "), verb)
	case *f.killPoint != "step" && *f.ckptDir == "":
		return bad("run: --kill-point %s needs --checkpoint DIR: the rank dies at a checkpoint", *f.killPoint)
	case *f.killPoint != "step" && *f.hang:
		return bad("run: --hang and --kill-point %s: a rank hangs after a step only (--kill-point step); at a checkpoint it dies", *f.killPoint)
	}
	return nil
}

// checkpointHooks writes a checkpoint to --checkpoint every --every steps
// (dying partway or after one where the fault says so) and sets up
// --resume from the steps stored there.
func (f *runFlags) checkpointHooks(tc *emu.TrainConfig, job *mpi.Job, flt fault, stderr io.Writer) error {
	dir := *f.ckptDir
	if dir == "" {
		if *f.resume {
			return bad("--resume needs --checkpoint DIR")
		}
		return nil
	}
	store := &ckptStore{dir: dir, rank: -1}
	if job != nil {
		store.rank = job.Rank
	}
	if err := store.probe(); err != nil {
		return err
	}
	if n, err := store.cleanTemp(); err != nil {
		return fmt.Errorf("run: --checkpoint %s: %w", dir, err)
	} else if n > 0 {
		fmt.Fprintf(stderr, "shardlab: removed %d temporary checkpoint file(s) that interrupted writes left in %s\n", n, dir)
	}
	tc.CheckpointEvery = *f.every
	tc.Hooks.Checkpoint = func(c *emu.Checkpoint) error {
		var midway func()
		if flt.at("write", c.Step) {
			midway = flt.die
		}
		if err := store.write(c, midway); err != nil {
			return err
		}
		if flt.at("written", c.Step) {
			flt.die()
		}
		return nil
	}
	tc.Hooks.Committed = store.keep
	if !*f.resume {
		return nil
	}
	return resumeHooks(tc, store, job, stderr)
}

// resumeHooks sets up --resume from the checkpoints store holds, and the
// hooks that say what was skipped and where training resumed.
func resumeHooks(tc *emu.TrainConfig, store *ckptStore, job *mpi.Job, stderr io.Writer) error {
	dir := store.dir
	steps, err := store.steps()
	if err != nil {
		return err
	}
	if job == nil && len(steps) == 0 {
		if note := store.processesNote(1); note != "" {
			return bad("run: --resume: %s", note)
		}
		return bad("run: --resume: no checkpoint in %s (want files named %sN.bin)", dir, store.prefix())
	}
	tc.ResumeSteps, tc.LoadCheckpoint = steps, store.load
	tc.Hooks.Skipped = func(step int, why error) error {
		who := ""
		if job != nil {
			who = fmt.Sprintf("rank %d: ", job.Rank)
		}
		warn(stderr, "run", "%sskipped the checkpoint of step %d, which cannot be used (%s), and resumed from an older one", who, step, oneLine(why.Error()))
		return nil
	}
	tc.Hooks.Resumed = func(step int, held [][]int) error {
		if job == nil {
			_, err := fmt.Fprintf(stderr, "shardlab: resuming from the checkpoint of step %d in %s\n", step, dir)
			return err
		}
		_, err := fmt.Fprintf(stderr, "shardlab: rank %d: resuming from step %d, the newest that every rank holds (steps by rank: %v)\n", job.Rank, step, held)
		return err
	}
	return nil
}

// progressHook draws the progress bar after every step, dies or hangs
// there where the fault says so, and records each step's wall time.
func (f *runFlags) progressHook(tc *emu.TrainConfig, flt fault, stderr io.Writer) *[]time.Duration {
	start := time.Now()
	stepStart := start
	wall := new([]time.Duration)
	tc.Hooks.Step = func(r emu.StepReport) error {
		now := time.Now()
		*wall = append(*wall, now.Sub(stepStart))
		stepStart = now
		if !*f.quiet && !*f.asJSON {
			progress(stderr, r, tc.Steps, now.Sub(start))
		}
		if flt.at("step", r.Step) {
			if flt.hang {
				select {} // stop answering, as a wedged host does
			}
			flt.die()
		}
		return nil
	}
	return wall
}

// trainError restates what Train returned: a resume that cannot go on in
// terms of flags; a bad layout or checkpoint as bad input; a link down as
// a failure.
func trainError(err error, ckptDir string, processes int) error {
	if rerr := resumeError(err, ckptDir, processes); rerr != nil {
		return rerr
	}
	if errors.Is(err, emu.ErrInvalid) || errors.Is(err, mesh.ErrTensorOverDCN) || errors.Is(err, mesh.ErrContextOverDCN) || errors.Is(err, emu.ErrCheckpoint) {
		return usageError{err}
	}
	return err
}

func progress(w io.Writer, r emu.StepReport, total int, elapsed time.Duration) {
	const width = 30
	done := r.Step * width / max(total, 1)
	bar := strings.Repeat("=", done) + strings.Repeat(" ", width-done)
	tps := float64(r.Step*r.Tokens) / elapsed.Seconds()
	fmt.Fprintf(w, "\rstep %d/%d [%s] loss %.4f  %.0f tokens/s", r.Step, total, bar, r.Loss, tps)
}

// train runs tc. Under MPI it returns the transport's error as soon as a
// peer rank goes silent; the devices waiting on that rank stay blocked
// until the process ends (run returns exitStopped, main exits).
func train(tc emu.TrainConfig, job *mpi.Job) (*emu.Result, error) {
	if job == nil {
		return emu.Train(tc)
	}
	type result struct {
		res *emu.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := emu.Train(tc)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case err := <-job.Stopped:
		return nil, err
	}
}
