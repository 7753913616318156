package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/emu"
	"shardlab/emu/fabric"
	"shardlab/emu/mpi"
	"shardlab/mesh"
	"shardlab/trace"
	"shardlab/unit"
)

// report writes, at rank 0, the trace and the report (text or JSON) with,
// under MPI, every rank's bytes to every other; a diverged run is an error
// after its report.
func (f *runFlags) report(tc emu.TrainConfig, res *emu.Result, wall []time.Duration, job *mpi.Job, stdout io.Writer) error {
	var mpiBytes, sharedBytes [][]int64
	if job != nil {
		// every rank's bytes to every other, for the report and the
		// cross-check with Open MPI's own monitoring
		b, _ := json.Marshal([][]int64{job.BytesTo(), job.SharedTo()})
		parts, err := job.Gather(b)
		if err != nil {
			return err
		}
		for _, p := range parts {
			var rows [][]int64
			json.Unmarshal(p, &rows)
			if len(rows) == 2 {
				mpiBytes, sharedBytes = append(mpiBytes, rows[0]), append(sharedBytes, rows[1])
			}
		}
		if job.Rank != 0 {
			return nil
		}
	}
	if *f.tracePath != "" {
		if err := writeEmuTrace(*f.tracePath, res); err != nil {
			return err
		}
	}
	out := runJSON(tc, res, wall)
	out.MPIBytes = mpiBytes
	if slices.ContainsFunc(sharedBytes, func(row []int64) bool { return slices.ContainsFunc(row, func(n int64) bool { return n > 0 }) }) {
		out.SharedBytes = sharedBytes
	}
	if job != nil {
		out.Processes = job.Size
	}
	var err error
	if *f.asJSON {
		err = writeJSON(stdout, out)
	} else {
		err = writeRunReport(stdout, tc, res, out, tc.Data.Name())
	}
	if err == nil && res.Diverged != nil {
		// reported above; the run itself failed
		return fmt.Errorf("run: training diverged: %s, so it stopped after step %d of %d; lower --lr (now %g)", res.Diverged, res.Diverged.Step, tc.Steps, tc.LR)
	}
	return err
}

func writeEmuTrace(path string, res *emu.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := trace.NewWriter(f)
	tw.Process(1, "virtual chips (simulated time)")
	byDev := map[int][]fabric.Span{}
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

// runOut is what run --json prints. Keys use the words plan and model use
// (chips, seq_len, tied_embeddings) and carry their units.
type runOut struct {
	Layout          string     `json:"layout"`
	AcceleratorType string     `json:"accelerator_type"`
	Topology        string     `json:"topology"` // of one slice, as in plan --json
	Slices          int        `json:"slices"`
	Devices         int        `json:"chips"` // virtual chips
	Model           emu.Config `json:"model"` // its keys are model.Spec's
	Params          int        `json:"params"`
	Losses          []number   `json:"losses"`
	SimStep         number     `json:"simulated_step_time_s"`
	WallStep        number     `json:"measured_step_time_s"`
	Bubble          number     `json:"bubble_fraction"`
	Bytes           []sentOut  `json:"sent_all_chips_all_steps"`
	PeakMemory      []memOut   `json:"peak_hbm_used_per_chip"`
	ParamsSHA256    string     `json:"params_sha256"`
	Processes       int        `json:"processes"`
	ResumedFrom     int        `json:"resumed_from_step"`
	// Schedule and Chunks are given with a pipeline only.
	Schedule string    `json:"schedule,omitempty"`
	Chunks   int       `json:"chunks_per_device,omitempty"`
	MPIBytes [][]int64 `json:"mpi_bytes,omitempty"`
	// SharedBytes is what each rank lent each other in shared memory.
	SharedBytes [][]int64    `json:"mpi_shared_memory_bytes,omitempty"`
	Diverged    *divergedOut `json:"diverged,omitempty"`
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

// memOut is emu.Memory with the unit in its keys.
type memOut struct {
	Weights     int64 `json:"weights_bytes"`
	Gradients   int64 `json:"gradients_bytes"`
	Optimizer   int64 `json:"optimizer_bytes"`
	Activations int64 `json:"activations_bytes"`
	Transient   int64 `json:"transient_bytes"`
}

// sentOut is the bytes one collective sent, all chips, all steps.
type sentOut struct {
	Collective string `json:"collective"`
	ICIBytes   int64  `json:"ici_bytes"`
	DCNBytes   int64  `json:"dcn_bytes"`
}

func totals(res *emu.Result) []sentOut {
	byOp := map[string]*sentOut{}
	for _, d := range res.Devices {
		for op, b := range d.SentByAxis {
			if byOp[op] == nil {
				byOp[op] = &sentOut{Collective: op}
			}
			byOp[op].ICIBytes += b[0]
			byOp[op].DCNBytes += b[1]
		}
	}
	out := []sentOut{}
	for _, s := range byOp {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Collective < out[j].Collective })
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
	ms := tc.Mesh.Multislice
	o := runOut{Layout: tc.Mesh.String(), AcceleratorType: ms.Slice.AcceleratorType(), Topology: ms.Slice.Topology.String(), Slices: ms.Slices,
		Devices: tc.Mesh.Chips(), Model: tc.Model, Losses: numbers(res.Losses), SimStep: number(meanTail(sim)), WallStep: number(meanTail(w)),
		Bubble: number(res.Bubble), Bytes: totals(res), ResumedFrom: res.ResumedFrom}
	if tc.Mesh.Size(mesh.Pipeline) > 1 {
		o.Schedule, o.Chunks = string(tc.Schedule), max(tc.Chunks, 1)
	}
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
		o.PeakMemory = append(o.PeakMemory, memOut(d.Memory))
	}
	return o
}

// writeRunReport writes run's text report: the run, its model and data,
// its loss, step time and bubble, then the bytes sent and the peak memory.
func writeRunReport(w io.Writer, tc emu.TrainConfig, res *emu.Result, o runOut, data string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s, %s, layout %s\n", unit.Plural(o.Devices, "virtual chip"), tc.Mesh.Multislice, o.Layout)
	if o.Processes > 1 {
		fmt.Fprintf(tw, "processes\t%d MPI ranks, one per host\n", o.Processes)
	}
	fmt.Fprintf(tw, "model\t%s, d_model %d, %s (%d KV), d_ff %d, vocab %d, seq %d: %d parameters\n",
		unit.Plural(tc.Model.Layers, "layer"), tc.Model.DModel, unit.Plural(tc.Model.Heads, "head"), tc.Model.KVHeads, tc.Model.DFF, tc.Model.Vocab, tc.Model.Seq, o.Params)
	if c := tc.Model; c.Experts > 0 {
		fe := c.ExpertDFF
		if fe == 0 {
			fe = c.DFF
		}
		fmt.Fprintf(tw, "experts\t%d per MoE layer (layers %d to %d), %d per token, d_ff %d each, capacity factor %.4g; expert=%d\n",
			c.Experts, c.FirstDenseLayers+1, c.Layers, c.ExpertsPerToken, fe, c.CapacityFactor, tc.Mesh.Size(mesh.Expert))
	}
	if tc.Model.FlashAttention {
		fmt.Fprintf(tw, "attention\tflash: block by block, one log-sum-exp per query kept for the backward pass\n")
	}
	fmt.Fprintf(tw, "data\t%s, %s per step\n", data, unit.Plural(tc.GlobalBatch, "sequence"))
	if res.ResumedFrom > 0 {
		fmt.Fprintf(tw, "resumed\tfrom the checkpoint of step %d\n", res.ResumedFrom)
	}
	if n := len(res.Losses); n > 0 {
		fmt.Fprintf(tw, "loss\t%.4f at the first step, %.4f at the last\n", res.Losses[0], res.Losses[n-1])
	}
	if d := res.Diverged; d != nil {
		fmt.Fprintf(tw, "diverged\t%s: stopped after step %d of %d\n", d, d.Step, tc.Steps)
	}
	fmt.Fprintf(tw, "step time\tsimulated %v on %s; measured %v in this process\n", unit.Seconds(float64(o.SimStep)), tc.Mesh.Multislice.Slice.Chip.Name, unit.Seconds(float64(o.WallStep)))
	if tc.Mesh.Size(mesh.Pipeline) > 1 {
		sched := string(tc.Schedule)
		if tc.Schedule.Chunked() {
			sched += ", " + unit.Plural(tc.Chunks, "chunk") + " per device"
		}
		fmt.Fprintf(tw, "pipeline bubble\t%.1f%% (%s, %s)\n", 100*res.Bubble, sched, unit.Plural(tc.MicroBatches, "micro-batch"))
	}
	tw.Flush()
	writeRunBytes(w, o)
	return writeRunMemory(w, o)
}

// writeRunBytes writes the bytes each collective sent over ICI and DCN
// and, under MPI, the bytes between ranks.
func writeRunBytes(w io.Writer, o runOut) {
	fmt.Fprintf(w, "\nbytes sent, all chips, all steps:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  collective\tICI\tDCN")
	for _, b := range o.Bytes {
		fmt.Fprintf(tw, "  %s\t%v\t%v\n", b.Collective, unit.Bytes(b.ICIBytes), unit.Bytes(b.DCNBytes))
	}
	tw.Flush()
	if len(o.MPIBytes) > 0 {
		fmt.Fprintf(w, "\nbytes over MPI (sender rank by receiver rank, 24-byte headers included):\n")
		for r, row := range o.MPIBytes {
			fmt.Fprintf(w, "  rank %d: %v\n", r, row)
		}
	}
	if len(o.SharedBytes) > 0 {
		fmt.Fprintf(w, "bytes lent in shared memory, read in place (ranks on one machine; sender by receiver):\n")
		for r, row := range o.SharedBytes {
			fmt.Fprintf(w, "  rank %d: %v\n", r, row)
		}
	}
}

// writeRunMemory writes each chip's peak memory by kind.
func writeRunMemory(w io.Writer, o runOut) error {
	fmt.Fprintf(w, "\npeak memory per chip:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  chip\tweights\tgradients\toptimizer\tactivations\ttransient\ttotal")
	for i, m := range o.PeakMemory {
		fmt.Fprintf(tw, "  %d\t%v\t%v\t%v\t%v\t%v\t%v\n", i, unit.Bytes(m.Weights), unit.Bytes(m.Gradients), unit.Bytes(m.Optimizer),
			unit.Bytes(m.Activations), unit.Bytes(m.Transient), unit.Bytes(emu.Memory(m).Total()))
	}
	return tw.Flush()
}
