package emu

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"shardlab/mesh"
	"shardlab/unit"
)

// Report is a training run's report, what shardlab run prints: the JSON
// fields (keys in the words plan and model use: chips, seq_len,
// tied_embeddings, with their units), and WriteText for people. NewReport
// builds it; a caller running under MPI adds Processes, MPIBytes and
// SharedBytes.
type Report struct {
	Layout          string       `json:"layout"`
	AcceleratorType string       `json:"accelerator_type"`
	Topology        string       `json:"topology"` // of one slice, as in plan --json
	Slices          int          `json:"slices"`
	Devices         int          `json:"chips"` // virtual chips
	Model           Config       `json:"model"` // its keys are model.Spec's
	Params          int          `json:"params"`
	Losses          []Number     `json:"losses"`
	SimStep         Number       `json:"simulated_step_time_s"`
	WallStep        Number       `json:"measured_step_time_s"`
	Bubble          Number       `json:"bubble_fraction"`
	Bytes           []SentBytes  `json:"sent_all_chips_all_steps"`
	PeakMemory      []PeakMemory `json:"peak_hbm_used_per_chip"`
	ParamsSHA256    string       `json:"params_sha256"`
	Processes       int          `json:"processes"`
	ResumedFrom     int          `json:"resumed_from_step"`
	// Schedule and Chunks are given with a pipeline only.
	Schedule string    `json:"schedule,omitempty"`
	Chunks   int       `json:"chunks_per_device,omitempty"`
	MPIBytes [][]int64 `json:"mpi_bytes,omitempty"`
	// SharedBytes is what each rank lent each other in shared memory.
	SharedBytes [][]int64       `json:"mpi_shared_memory_bytes,omitempty"`
	Diverged    *DivergedReport `json:"diverged,omitempty"`

	tc  TrainConfig
	res *Result
}

// DivergedReport is why a run stopped early.
type DivergedReport struct {
	Step      int    `json:"step"`
	Loss      Number `json:"loss_nats"`
	LossLimit Number `json:"loss_limit_nats"`
	Reason    string `json:"reason"`
}

// Number is a float64 that encodes NaN and ±Inf, which JSON has no
// numbers for, as null (a diverged run's last loss); fields next to it
// say why.
type Number float64

// MarshalJSON writes n, or null for NaN and ±Inf.
func (n Number) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

func numbers(x []float64) []Number {
	out := make([]Number, len(x))
	for i, v := range x {
		out[i] = Number(v)
	}
	return out
}

// PeakMemory is Memory with the unit in its keys.
type PeakMemory struct {
	Weights     int64 `json:"weights_bytes"`
	Gradients   int64 `json:"gradients_bytes"`
	Optimizer   int64 `json:"optimizer_bytes"`
	Activations int64 `json:"activations_bytes"`
	Transient   int64 `json:"transient_bytes"`
}

// SentBytes is the bytes one collective sent, all chips, all steps.
type SentBytes struct {
	Collective string `json:"collective"`
	ICIBytes   int64  `json:"ici_bytes"`
	DCNBytes   int64  `json:"dcn_bytes"`
}

func totals(res *Result) []SentBytes {
	byOp := map[string]*SentBytes{}
	for _, d := range res.Devices {
		for op, b := range d.SentByAxis {
			if byOp[op] == nil {
				byOp[op] = &SentBytes{Collective: op}
			}
			byOp[op].ICIBytes += b[0]
			byOp[op].DCNBytes += b[1]
		}
	}
	out := []SentBytes{}
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

// NewReport reports res, trained by tc, whose steps took wall seconds
// each as measured by the caller.
func NewReport(tc TrainConfig, res *Result, wall []float64) *Report {
	var sim []float64
	for _, s := range res.Steps {
		sim = append(sim, s.SimSeconds)
	}
	ms := tc.Mesh.Multislice
	o := &Report{tc: tc, res: res, Layout: tc.Mesh.String(), AcceleratorType: ms.Slice.AcceleratorType(), Topology: ms.Slice.Topology.String(), Slices: ms.Slices,
		Devices: tc.Mesh.Chips(), Model: tc.Model, Losses: numbers(res.Losses), SimStep: Number(meanTail(sim)), WallStep: Number(meanTail(wall)),
		Bubble: Number(res.Bubble), Bytes: totals(res), ResumedFrom: res.ResumedFrom}
	if tc.Mesh.Size(mesh.Pipeline) > 1 {
		o.Schedule, o.Chunks = string(tc.Schedule), max(tc.Chunks, 1)
	}
	if d := res.Diverged; d != nil {
		o.Diverged = &DivergedReport{Step: d.Step, Loss: Number(d.Loss), LossLimit: Number(d.Limit), Reason: d.String()}
	}
	h := sha256.New()
	for _, t := range res.Final.Tensors() {
		o.Params += len(t)
		binary.Write(h, binary.LittleEndian, t)
	}
	o.ParamsSHA256 = hex.EncodeToString(h.Sum(nil))
	o.Processes = 1
	for _, d := range res.Devices {
		o.PeakMemory = append(o.PeakMemory, PeakMemory(d.Memory))
	}
	return o
}

// WriteText writes the report for people: the run, its model and data,
// its loss, step time and bubble, then the bytes sent and the peak memory.
// It needs the run behind the report, so a Report from NewReport (one
// decoded from JSON has only the JSON fields).
func (o *Report) WriteText(w io.Writer) error {
	if o.res == nil {
		return fmt.Errorf("emu: Report.WriteText: a report without its run (not from NewReport): %w", ErrInvalid)
	}
	tc, res, data := o.tc, o.res, o.tc.Data.Name()
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
		fmt.Fprintf(tw, "experts\t%d per MoE layer (layers %d to %d), %d per token, d_ff %d each, capacity factor %.4g; %s\n",
			c.Experts, c.FirstDenseLayers+1, c.Layers, c.ExpertsPerToken, fe, c.CapacityFactor, factor(mesh.Expert, tc.Mesh.Size(mesh.Expert)))
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
	o.writeBytes(w)
	return o.writeMemory(w)
}

// writeBytes writes the bytes each collective sent over ICI and DCN
// and, under MPI, the bytes between ranks.
func (o *Report) writeBytes(w io.Writer) {
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

// writeMemory writes each chip's peak memory by kind.
func (o *Report) writeMemory(w io.Writer) error {
	fmt.Fprintf(w, "\npeak memory per chip:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  chip\tweights\tgradients\toptimizer\tactivations\ttransient\ttotal")
	for i, m := range o.PeakMemory {
		fmt.Fprintf(tw, "  %d\t%v\t%v\t%v\t%v\t%v\t%v\n", i, unit.Bytes(m.Weights), unit.Bytes(m.Gradients), unit.Bytes(m.Optimizer),
			unit.Bytes(m.Activations), unit.Bytes(m.Transient), unit.Bytes(Memory(m).Total()))
	}
	return tw.Flush()
}
