package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"shardlab/emu"
	"shardlab/emu/mpi"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/schedule"
	"shardlab/trace"
	"shardlab/unit"
)

// the default run: 8 virtual chips in two 4-chip v5e slices
const (
	defaultRunTPU    = "v5litepod-4"
	defaultRunSlices = 2
	defaultRunMesh   = "data=2(dcn),fsdp=2,tensor=2"
)

func runEmu(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	tpu := fs.String("tpu", defaultRunTPU, "accelerator type of one slice")
	slices := fs.Int("slices", defaultRunSlices, "slices joined by DCN")
	meshSpec := fs.String("mesh", defaultRunMesh, "layout, e.g. data=2(dcn),fsdp=2,tensor=2")
	planPath := fs.String("plan", "", "take the layout (and topology) from 'shardlab plan --json' output in FILE")
	layers := fs.Int("layers", 4, "model layers")
	dModel := fs.Int("d-model", 64, "model width")
	heads := fs.Int("heads", 4, "attention heads")
	kvHeads := fs.Int("kv-heads", 2, "key/value heads")
	dff := fs.Int("d-ff", 176, "MLP width")
	seq := fs.Int("seq", 64, "sequence length")
	tied := fs.Bool("tied", false, "tie the output projection to the embedding")
	batch := fs.Int("batch", 16, "global batch in sequences")
	micro := fs.Int("micro-batches", 0, "pipeline micro-batches (default: 2 per stage with a pipeline)")
	sched := fs.String("schedule", "1f1b", "pipeline schedule: gpipe or 1f1b")
	steps := fs.Int("steps", 30, "training steps")
	lr := fs.Float64("lr", 3e-3, "Adam learning rate")
	bf16 := fs.Bool("bf16", true, "compute with bfloat16 copies of the weights; Adam keeps fp32 masters")
	seed := fs.Uint64("seed", 1, "seed for the weights and the batches")
	data := fs.String("data", "", "text FILE or DIR of .go/.txt/.md files (default: the Go sources under GOROOT)")
	synthetic := fs.Bool("synthetic", false, "train on synthetic sequences instead of text")
	ckptDir := fs.String("checkpoint", "", "write a checkpoint to DIR every --every steps")
	every := fs.Int("every", 10, "steps between checkpoints")
	resume := fs.Bool("resume", false, "continue from the checkpoint in --checkpoint DIR")
	failLink := fs.String("fail-link", "", "mark the link between devices A-B as down")
	tracePath := fs.String("trace", "", "write a Chrome/Perfetto trace (one track per virtual chip) to FILE")
	asJSON := fs.Bool("json", false, "print JSON")
	quiet := fs.Bool("quiet", false, "no progress bar")
	killRank := fs.Int("kill-rank", -1, "fault injection under mpirun: this rank kills itself (SIGKILL) after --kill-step")
	killStep := fs.Int("kill-step", 0, "the step after which --kill-rank dies")
	hang := fs.Bool("hang", false, "with --kill-rank: the rank hangs instead of dying")
	killPoint := fs.String("kill-point", "step", "where --kill-rank dies: step (after --kill-step), write (partway through writing the first checkpoint at or after --kill-step), written (once that checkpoint is in place, before every rank has confirmed its own)")
	mpiTimeout := fs.Duration("mpi-timeout", 10*time.Minute, "under mpirun: how long a chip waits on a silent rank before the run stops, naming it")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := checkRunCounts(fs); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var m mesh.Mesh
	var err error
	if *planPath != "" {
		if set["mesh"] || set["tpu"] || set["slices"] {
			return bad("run: --plan gives the layout and topology; drop --mesh, --tpu and --slices")
		}
		m, err = meshFromPlan(*planPath)
	} else {
		m, err = mesh.ParseOn(*tpu, *slices, *meshSpec)
	}
	if err != nil {
		return err
	}
	if m.Chips() > maxRunChips {
		return bad("run: the layout %s on %s has %d chips, more virtual chips than one run emulates (at most %d)", m, m.Multislice, m.Chips(), maxRunChips)
	}
	var src emu.Source
	vocab := 256
	if *synthetic {
		src = &emu.Synthetic{V: vocab, Seed: *seed}
	} else {
		text, desc, err := loadCorpus(*data)
		if err != nil {
			return err
		}
		if src, err = emu.NewBytes(text, *seed, desc, *seq); err != nil {
			return usageError{err}
		}
	}
	mb := *micro
	if mb == 0 {
		mb = 1
		if p := m.Size(mesh.Pipeline); p > 1 {
			mb = 2 * p
		}
	}
	k, err := schedule.ParseKind(*sched)
	if err != nil {
		return usageError{err}
	}
	tc := emu.TrainConfig{
		Model: emu.Config{Layers: *layers, DModel: *dModel, Heads: *heads, KVHeads: *kvHeads, DFF: *dff, Vocab: vocab, Seq: *seq, Tied: *tied},
		Mesh:  m, GlobalBatch: *batch, MicroBatches: mb, Schedule: k, Steps: *steps, Seed: *seed, LR: *lr, Data: src,
		BF16Compute: *bf16, Trace: *tracePath != "",
	}
	if *failLink != "" {
		a, b, ok := strings.Cut(*failLink, "-")
		x, err1 := strconv.Atoi(a)
		y, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil {
			return bad("--fail-link %q, want A-B with two device numbers, e.g. 3-4", *failLink)
		}
		tc.FailLinks = [][2]int{{x, y}}
	}
	// under mpirun: one rank per host, the chips of other hosts reached
	// through MPI; rank 0 reports
	rank := 0
	var job *mpi.Job
	if mpi.Launched() {
		job, err = mpi.Connect(m.Multislice.Hosts(), m.Multislice.Slice.Chip.Host.Chips, *mpiTimeout)
		if err != nil {
			return usageError{err}
		}
		defer job.Close()
		rank = job.Rank
		tc.Remote = job.Remote
		*quiet = *quiet || rank != 0
	}
	switch *killPoint {
	case "step", "write", "written":
	default:
		return bad("run: --kill-point %q, want step, write or written", *killPoint)
	}
	// fault injection: this rank dies here
	dies := func(point string, step int) bool {
		return job != nil && rank == *killRank && *killPoint == point && (step == *killStep || point != "step" && step > *killStep)
	}
	die := func() {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	var store *ckptStore
	if *ckptDir != "" {
		if *every < 1 {
			return bad("--every %d, want at least 1", *every)
		}
		store = &ckptStore{dir: *ckptDir, rank: -1}
		if job != nil {
			store.rank = rank
		}
		if n, err := store.cleanTemp(); err != nil {
			return fmt.Errorf("run: --checkpoint %s: %w", *ckptDir, err)
		} else if n > 0 {
			fmt.Fprintf(stderr, "shardlab: removed %d temporary checkpoint file(s) that interrupted writes left in %s\n", n, *ckptDir)
		}
		tc.CheckpointEvery = *every
		tc.OnCheckpoint = func(c *emu.Checkpoint) error {
			var midway func()
			if dies("write", c.Step) {
				midway = die
			}
			if err := store.write(c, midway); err != nil {
				return err
			}
			if dies("written", c.Step) {
				die()
			}
			return nil
		}
		tc.OnCheckpointCommitted = store.keep
	}
	if *resume {
		if store == nil {
			return bad("--resume needs --checkpoint DIR")
		}
		steps, err := store.steps()
		if err != nil {
			return err
		}
		if job == nil && len(steps) == 0 {
			return bad("run: --resume: no checkpoint in %s (want files named %sN.bin)", *ckptDir, store.prefix())
		}
		tc.ResumeSteps, tc.LoadCheckpoint = steps, store.load
		tc.OnResume = func(step int, held [][]int) {
			if job == nil {
				fmt.Fprintf(stderr, "shardlab: resuming from the checkpoint of step %d in %s\n", step, *ckptDir)
				return
			}
			fmt.Fprintf(stderr, "shardlab: rank %d: resuming from step %d, the newest that every rank holds (steps by rank: %v)\n", rank, step, held)
		}
	}
	// refuse a run that will not fit before allocating it, and keep the
	// collector's heap under what is available
	avail, err := checkRunMemory(tc)
	if err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); avail > 0 && !set {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(avail))
	}
	start := time.Now()
	stepStart := start
	var wall []time.Duration
	tc.OnStep = func(r emu.StepReport) {
		now := time.Now()
		wall = append(wall, now.Sub(stepStart))
		stepStart = now
		if !*quiet && !*asJSON {
			progress(stderr, r, *steps, now.Sub(start))
		}
		if dies("step", r.Step) {
			if *hang {
				select {} // stop answering, as a wedged host does
			}
			die()
		}
	}
	res, err := emu.Train(tc)
	if !*quiet && !*asJSON {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		if rerr := resumeError(err, *ckptDir); rerr != nil {
			return rerr
		}
		// a bad layout or checkpoint is bad input; a link down is a failure
		if errors.Is(err, emu.ErrInvalid) || errors.Is(err, mesh.ErrTensorOverDCN) || errors.Is(err, emu.ErrCheckpoint) {
			return usageError{err}
		}
		return err
	}
	var mpiBytes [][]int64
	if job != nil {
		// every rank's bytes to every other, for the report and the
		// cross-check with Open MPI's own monitoring
		b, _ := json.Marshal(job.BytesTo())
		parts, err := job.Gather(b)
		if err != nil {
			return err
		}
		for _, p := range parts {
			var row []int64
			json.Unmarshal(p, &row)
			mpiBytes = append(mpiBytes, row)
		}
	}
	if rank != 0 {
		return nil
	}
	if *tracePath != "" {
		if err := writeEmuTrace(*tracePath, res); err != nil {
			return err
		}
	}
	out := runJSON(tc, res, wall)
	out.MPIBytes = mpiBytes
	if job != nil {
		out.Processes = job.Size
	}
	if *asJSON {
		err = writeJSON(stdout, out)
	} else {
		err = writeRunReport(stdout, tc, res, out, src.Name())
	}
	if err == nil && res.Diverged != nil {
		// reported above; the run itself failed
		return fmt.Errorf("run: training diverged: %s, so it stopped after step %d of %d; lower --lr (now %g)", res.Diverged, res.Diverged.Step, tc.Steps, tc.LR)
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

// meshFromPlan reads the layout and topology of a 'shardlab plan --json'
// object.
func meshFromPlan(path string) (mesh.Mesh, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return mesh.Mesh{}, bad("--plan %s: %v", path, err)
	}
	var p struct {
		Accelerator string `json:"accelerator_type"`
		Topology    string `json:"topology"`
		Slices      int    `json:"slices"`
		Layout      struct {
			Axes []mesh.Axis `json:"axes"`
		} `json:"layout"`
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Accelerator == "" || len(p.Layout.Axes) == 0 {
		return mesh.Mesh{}, bad("--plan %s: not the JSON object 'shardlab plan --json' prints (want accelerator_type, slices and layout.axes)", path)
	}
	s, err := hw.ParseAcceleratorType(p.Accelerator)
	if err != nil {
		return mesh.Mesh{}, err
	}
	if p.Topology != "" {
		if s, err = hw.ParseTopology(s.Chip, p.Topology); err != nil {
			return mesh.Mesh{}, err
		}
	}
	ms, err := hw.NewMultislice(s, max(p.Slices, 1), 0)
	if err != nil {
		return mesh.Mesh{}, err
	}
	if ms.Chips() > 4096 {
		return mesh.Mesh{}, bad("--plan %s: %d chips is more virtual chips than one process runs (at most 4096)", path, ms.Chips())
	}
	return mesh.New(ms, p.Layout.Axes...)
}

// loadCorpus reads a text file, the text files under a directory, or by
// default the Go sources under GOROOT/src, in sorted order, up to 4 MiB.
func loadCorpus(path string) ([]byte, string, error) {
	const limit = 4 << 20
	desc := path
	if path == "" {
		root := os.Getenv("GOROOT")
		if root == "" {
			root = runtime.GOROOT()
		}
		path = filepath.Join(root, "src")
		desc = "Go sources under " + path
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", bad("--data %s: %v", path, err)
	}
	if !info.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, "", bad("--data %s: %v", path, err)
		}
		return b[:min(len(b), limit)], desc, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		switch filepath.Ext(p) {
		case ".go", ".txt", ".md":
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	sort.Strings(files)
	var out []byte
	for _, f := range files {
		if len(out) >= limit {
			break
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		out = append(out, b...)
	}
	if len(out) == 0 {
		return nil, "", bad("--data %s: no .go, .txt or .md files", path)
	}
	return out[:min(len(out), limit)], fmt.Sprintf("%s (%d files, %v)", desc, len(files), unit.Bytes(min(len(out), limit))), nil
}

func writeEmuTrace(path string, res *emu.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := trace.NewWriter(f)
	tw.Process(1, "virtual chips (simulated time)")
	byDev := map[int][]emu.Span{}
	for _, s := range res.Trace {
		byDev[s.Device] = append(byDev[s.Device], s)
	}
	for _, d := range res.Devices {
		tw.Track(1, d.ID, fmt.Sprintf("chip %d (slice %d, coord %v)", d.ID, d.Slice, d.Coord))
		spans := byDev[d.ID]
		sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
		last := 0.0
		for _, s := range spans {
			if s.Start > last+1e-12 {
				tw.Span(1, d.ID, "idle", "bubble", last*1e6, (s.Start-last)*1e6, nil)
			}
			cat := "collective"
			switch {
			case s.Name == "bubble":
				cat = "bubble"
			case strings.HasPrefix(s.Name, "F") || strings.HasPrefix(s.Name, "B"):
				cat = "compute"
			}
			tw.Span(1, d.ID, s.Name, cat, s.Start*1e6, (s.End-s.Start)*1e6, nil)
			last = max(last, s.End)
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type runOut struct {
	Layout       string                      `json:"layout"`
	Topology     string                      `json:"topology"`
	Devices      int                         `json:"devices"`
	Model        emu.Config                  `json:"model"`
	Params       int                         `json:"params"`
	Losses       []number                    `json:"losses"`
	SimStep      number                      `json:"simulated_step_seconds"`
	WallStep     number                      `json:"measured_step_seconds"`
	Bubble       number                      `json:"pipeline_bubble"`
	Bytes        map[string]map[string]int64 `json:"bytes_by_collective"`
	PeakMemory   []emu.Memory                `json:"peak_memory_per_device"`
	ParamsSHA256 string                      `json:"params_sha256"`
	Processes    int                         `json:"processes"`
	ResumedFrom  int                         `json:"resumed_from_step"`
	MPIBytes     [][]int64                   `json:"mpi_bytes,omitempty"`
	Diverged     *divergedOut                `json:"diverged,omitempty"`
}

// divergedOut is why a run stopped early.
type divergedOut struct {
	Step      int    `json:"step"`
	Loss      number `json:"loss_nats"`
	LossLimit number `json:"loss_limit_nats"`
	Reason    string `json:"reason"`
}

// number is a float64 that encodes NaN and ±Inf, which JSON has no
// numbers for, as null (a diverged run's last loss); fields next to it
// say why.
type number float64

func (n number) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

func numbers(x []float64) []number {
	out := make([]number, len(x))
	for i, v := range x {
		out[i] = number(v)
	}
	return out
}

func totals(res *emu.Result) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, d := range res.Devices {
		for op, b := range d.SentByAxis {
			if out[op] == nil {
				out[op] = map[string]int64{}
			}
			out[op]["ici"] += b[0]
			out[op]["dcn"] += b[1]
		}
	}
	return out
}

func meanTail(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	tail := x[len(x)/2:]
	s := 0.0
	for _, v := range tail {
		s += v
	}
	return s / float64(len(tail))
}

func runJSON(tc emu.TrainConfig, res *emu.Result, wall []time.Duration) runOut {
	var sim, w []float64
	for _, s := range res.Steps {
		sim = append(sim, s.SimSeconds)
	}
	for _, d := range wall {
		w = append(w, d.Seconds())
	}
	o := runOut{Layout: tc.Mesh.String(), Topology: tc.Mesh.Multislice.String(), Devices: tc.Mesh.Chips(), Model: tc.Model,
		Losses: numbers(res.Losses), SimStep: number(meanTail(sim)), WallStep: number(meanTail(w)), Bubble: number(res.Bubble), Bytes: totals(res),
		ResumedFrom: res.ResumedFrom}
	if d := res.Diverged; d != nil {
		o.Diverged = &divergedOut{Step: d.Step, Loss: number(d.Loss), LossLimit: number(d.Limit), Reason: d.String()}
	}
	h := sha256.New()
	for _, t := range res.Final.Tensors() {
		o.Params += len(t)
		binary.Write(h, binary.LittleEndian, t)
	}
	o.ParamsSHA256 = hex.EncodeToString(h.Sum(nil))
	o.Processes = 1
	for _, d := range res.Devices {
		o.PeakMemory = append(o.PeakMemory, d.Memory)
	}
	return o
}

func writeRunReport(w io.Writer, tc emu.TrainConfig, res *emu.Result, o runOut, data string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%d virtual chips, %s, layout %s\n", o.Devices, o.Topology, o.Layout)
	if o.Processes > 1 {
		fmt.Fprintf(tw, "processes\t%d MPI ranks, one per host\n", o.Processes)
	}
	fmt.Fprintf(tw, "model\t%d layers, d_model %d, %d heads (%d KV), d_ff %d, vocab %d, seq %d: %d parameters\n",
		tc.Model.Layers, tc.Model.DModel, tc.Model.Heads, tc.Model.KVHeads, tc.Model.DFF, tc.Model.Vocab, tc.Model.Seq, o.Params)
	fmt.Fprintf(tw, "data\t%s, %d sequences per step\n", data, tc.GlobalBatch)
	if res.ResumedFrom > 0 {
		fmt.Fprintf(tw, "resumed\tfrom the checkpoint of step %d\n", res.ResumedFrom)
	}
	if n := len(res.Losses); n > 0 {
		fmt.Fprintf(tw, "loss\t%.4f at the first step, %.4f at the last\n", res.Losses[0], res.Losses[n-1])
	}
	if d := res.Diverged; d != nil {
		fmt.Fprintf(tw, "diverged\t%s: stopped after step %d of %d\n", d, d.Step, tc.Steps)
	}
	fmt.Fprintf(tw, "step time\tsimulated %.4g s on %s; measured %.4g s in this process\n", o.SimStep, tc.Mesh.Multislice.Slice.Chip.Name, o.WallStep)
	if tc.Mesh.Size(mesh.Pipeline) > 1 {
		fmt.Fprintf(tw, "pipeline bubble\t%.1f%% (%s, %d micro-batches)\n", 100*res.Bubble, tc.Schedule, tc.MicroBatches)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nbytes sent, all chips, all steps:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  collective\tICI\tDCN")
	var keys []string
	for k := range o.Bytes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%v\t%v\n", k, unit.Bytes(o.Bytes[k]["ici"]), unit.Bytes(o.Bytes[k]["dcn"]))
	}
	tw.Flush()
	if len(o.MPIBytes) > 0 {
		fmt.Fprintf(w, "\nbytes over MPI (sender rank by receiver rank, 24-byte headers included):\n")
		for r, row := range o.MPIBytes {
			fmt.Fprintf(w, "  rank %d: %v\n", r, row)
		}
	}
	fmt.Fprintf(w, "\npeak memory per chip:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  chip\tweights\tgradients\toptimizer\tactivations\ttransient\ttotal")
	for i, m := range o.PeakMemory {
		fmt.Fprintf(tw, "  %d\t%v\t%v\t%v\t%v\t%v\t%v\n", i, unit.Bytes(m.Weights), unit.Bytes(m.Gradients), unit.Bytes(m.Optimizer),
			unit.Bytes(m.Activations), unit.Bytes(m.Transient), unit.Bytes(m.Total()))
	}
	return tw.Flush()
}
