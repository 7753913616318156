package plan

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/mesh"
	"shardlab/schema"
	"shardlab/unit"
)

// JSON is the machine-readable form of a plan (shardlab plan --json). Keys
// are snake_case and carry their units: _bytes, _s (seconds), _fraction
// (0 to 1), _per_s. HBM per chip is split into capacity
// (hbm_capacity_bytes, hbm_usable_capacity_bytes) and use (hbm_used_*).
type JSON struct {
	Model       string `json:"model"`
	Params      int64  `json:"params"`
	Accelerator string `json:"accelerator_type"`
	Topology    string `json:"topology"`
	Slices      int    `json:"slices"`
	Chips       int    `json:"chips"`
	// Devices is the JAX devices of the chips (hw.Chip.JAXDevicesPerChip).
	Devices      int        `json:"devices"`
	Tier         string     `json:"tier"`
	InSlice      string     `json:"in_slice"`                // DP, FSDP or model parallel
	AcrossSlices string     `json:"across_slices,omitempty"` // DP, FSDP, expert (AcrossOf) or pipeline; absent for one slice
	Layout       LayoutJSON `json:"layout"`
	Seq          int        `json:"seq_len"`
	GlobalBatch  int        `json:"global_batch_sequences"`
	GlobalTokens int        `json:"global_batch_tokens"`
	MaxBatch     int        `json:"max_global_batch_sequences"`
	MicroBatches int        `json:"micro_batches"`
	// Accumulation is, without a pipeline, the micro-batches as MaxText's
	// gradient_accumulation_steps; absent when the step is one pass.
	Accumulation int `json:"gradient_accumulation_steps,omitempty"`
	// MicroBatch is the sequences per chip per micro-batch, fractional
	// where tensor x context chips share a sequence (ChipBatch.PerChip);
	// MicroBatchShard the sequences per batch shard (data x fsdp x
	// expert of the layout in chips, ChipBatch) per micro-batch; PerDeviceBatch MaxText's
	// per_device_batch_size, as export writes it (absent where no decimal
	// gives the batch).
	MicroBatch      float64 `json:"sequences_per_chip_per_micro_batch"`
	MicroBatchShard int     `json:"sequences_per_batch_shard_per_micro_batch"`
	PerDeviceBatch  float64 `json:"per_device_batch_size,omitempty"`
	Remat           string  `json:"remat"`
	// Schedule is the pipeline's schedule; absent without a pipeline.
	Schedule  string     `json:"schedule,omitempty"`
	Chunks    int        `json:"chunks_per_device"`
	Memory    MemoryJSON `json:"hbm_used_per_chip"`
	HBM       int64      `json:"hbm_capacity_bytes"`
	HBMUsable int64      `json:"hbm_usable_capacity_bytes"`
	// HostOffloaded is what the plan offloads to host memory per chip,
	// HostRAM the chip's share of its VM's RAM it is held to (left out
	// where the RAM is not published).
	HostOffloaded int64 `json:"host_offloaded_per_chip_bytes"`
	HostRAM       int64 `json:"host_ram_per_chip_bytes,omitempty"`
	Fits          bool  `json:"fits"`
	// MaxMicroBatch is the most sequences per chip per micro-batch the
	// layout fits with, MaxMicroBatchShard per batch shard (Plan.MaxMicroBatch).
	MaxMicroBatch      float64 `json:"max_fitting_sequences_per_chip_per_micro_batch"`
	MaxMicroBatchShard int     `json:"max_fitting_sequences_per_batch_shard_per_micro_batch"`
	// MaxMicroBatchBound is what stops one more: "hbm", "host_memory" or
	// "batch_limit".
	MaxMicroBatchBound string   `json:"max_fitting_bound"`
	Step               StepJSON `json:"step_time"`
	// Bubble is the fraction of the schedule's makespan a stage sits idle
	// (schedule.Timeline.Bubble); the step's share the text prints is
	// Step.Bubble over Step.Total.
	Bubble float64 `json:"bubble_fraction"`
	// MFU, MFUOther and HFU are against the peak MFUPeak names, the
	// chip's bf16 peak; a quantized plan has QuantizedMFU and QuantizedHFU
	// against its format's peak (QuantizedMFUPeak, int8 or fp8) besides.
	MFU              float64        `json:"mfu_fraction"`
	MFUPeak          string         `json:"mfu_peak"`
	QuantizedMFU     float64        `json:"quantized_mfu_fraction,omitempty"`
	QuantizedMFUPeak string         `json:"quantized_mfu_peak,omitempty"`
	MFUCausal        bool           `json:"mfu_attention_causal_halved"`
	MFUOther         float64        `json:"mfu_other_convention_fraction"`
	HFU              float64        `json:"hfu_fraction"`
	QuantizedHFU     float64        `json:"quantized_hfu_fraction,omitempty"`
	Efficiency       float64        `json:"assumed_efficiency_fraction"`
	MXU              float64        `json:"mxu_efficiency_fraction"`
	Padding          float64        `json:"mxu_padding_loss_fraction"`
	TokensChip       float64        `json:"tokens_per_s_per_chip"`
	Tokens           float64        `json:"tokens_per_s"`
	DCNBytes         int64          `json:"dcn_bytes_per_step"`
	ICIBytesChip     int64          `json:"ici_bytes_per_chip_per_step"`
	Collectives      []CommJSON     `json:"collectives_per_chip_per_step"`
	Reasons          []string       `json:"reasons"`
	Warnings         []string       `json:"warnings"`
	Rejected         []RejectedJSON `json:"rejected"`
	Evaluated        int            `json:"evaluated"`
	Top              []RankJSON     `json:"top"`
	Alternatives     []RankJSON     `json:"alternatives"`
	// Experts is the mixture of experts' routing; absent for a dense model.
	Experts *ExpertsJSON `json:"experts,omitempty"`
	// Band is the step time, MFU and tokens/s at the ends of the model's
	// measured error band (Plan.Band).
	Band *BandJSON `json:"prediction_band,omitempty"`
	// Published is validate's published runs of this very job beside the
	// pick (Plan.Published); absent where it holds none.
	Published []PublishedRunJSON `json:"published_runs,omitempty"`
}

// BandJSON is a plan's predicted figures at the ends of the step-time
// model's error band: validate's held-out rows of the plan's generation
// and model class (or the cell they pool into, Runs), the share of them
// the band holds, and their signed relative MFU error at its two ends.
type BandJSON struct {
	Runs           string  `json:"runs"`
	Rows           int     `json:"held_out_rows"`
	Share          float64 `json:"share_of_held_out_rows_fraction"`
	LowError       float64 `json:"low_relative_error"`
	HighError      float64 `json:"high_relative_error"`
	StepLow        float64 `json:"low_step_time_s"`
	StepHigh       float64 `json:"high_step_time_s"`
	MFULow         float64 `json:"low_mfu_fraction"`
	MFUHigh        float64 `json:"high_mfu_fraction"`
	TokensChipLow  float64 `json:"low_tokens_per_s_per_chip"`
	TokensChipHigh float64 `json:"high_tokens_per_s_per_chip"`
	TokensLow      float64 `json:"low_tokens_per_s"`
	TokensHigh     float64 `json:"high_tokens_per_s"`
	// OwnRuns and OwnRows are the job's own cell (its generation and
	// class, quantized for a quantized job) and its held-out rows, where
	// the band pooled past it for its few rows ("quantized v5p runs", 0).
	OwnRuns string `json:"own_runs,omitempty"`
	OwnRows *int   `json:"own_held_out_rows,omitempty"`
}

// pipelineSchedule is the estimate's schedule where its layout has a
// pipeline, "" where it has none (a schedule orders a pipeline's
// micro-batches).
func pipelineSchedule(e cost.Estimate) string {
	if e.Mesh.Size(mesh.Pipeline) > 1 {
		return string(e.Job.Schedule)
	}
	return ""
}

// layoutOf is the plan's layout in chips and in JAX devices.
func layoutOf(p Plan) LayoutJSON {
	e := p.Best.Estimate
	l := LayoutJSON{Spec: e.Mesh.String(), Axes: e.Mesh.Degrees()}
	if d, err := p.Devices(); err == nil {
		l.DeviceSpec, l.DeviceAxes = d.String(), d.Degrees
	}
	return l
}

// bandOf is the plan's figures at the ends of its band; nil without one.
func bandOf(p Plan) *BandJSON {
	b, ok := p.PredictionBand()
	if !ok {
		return nil
	}
	e := p.Best.Estimate
	n := float64(p.Request.Multislice.Chips())
	x := &BandJSON{Runs: b.Runs(), Rows: b.Rows, Share: cost.BandHigh - cost.BandLow, LowError: b.Low, HighError: b.High}
	x.StepLow, x.StepHigh = b.Step(e.Time.Step.Seconds())
	x.MFULow, x.MFUHigh = b.Rate(e.MFU)
	x.TokensChipLow, x.TokensChipHigh = b.Rate(e.TokensPerSecondPerChip)
	x.TokensLow, x.TokensHigh = x.TokensChipLow*n, x.TokensChipHigh*n
	if own, pooled := ownCell(b, e.Job, p.Request.Multislice.Slice.Chip.Generation); pooled {
		x.OwnRuns, x.OwnRows = own.Runs(), &own.Rows
	}
	return x
}

// ExpertsJSON is how a mixture of experts routes its tokens on the layout.
type ExpertsJSON struct {
	Experts         int     `json:"experts"`
	PerToken        int     `json:"experts_per_token"`
	Degree          int     `json:"expert_parallelism"`
	CapacityFactor  float64 `json:"capacity_factor"` // 0: dropless
	LoadImbalance   float64 `json:"load_imbalance"`
	TokensPerExpert float64 `json:"tokens_per_expert_per_chip_per_micro_batch"`
	// Dispatch is "all-to-all", or "ring of experts" (MaxText's
	// use_ring_of_experts), or DispatchNone without an expert axis; the
	// AllToAll fields are the expert axis's collectives (0 with none).
	Dispatch      string  `json:"dispatch"`
	AllToAllICI   float64 `json:"all_to_all_ici_s"`
	AllToAllDCN   float64 `json:"all_to_all_dcn_s"`
	AllToAllBytes int64   `json:"all_to_all_bytes_per_chip"`
	// Format is the number format the routed experts' GEMMs run in: the
	// job's quantization where MaxText's qwix rules quantize them, else
	// bf16 (cost.Job.UnquantizedExperts).
	Format string `json:"routed_experts_format"`
}

// expertsOf summarises the routing of an MoE estimate (nil when dense).
func expertsOf(e cost.Estimate) *ExpertsJSON {
	spec := e.Job.Model
	if !spec.MoE() {
		return nil
	}
	x := &ExpertsJSON{Experts: spec.Experts, PerToken: spec.ExpertsPerToken, Degree: e.Mesh.Size(mesh.Expert),
		CapacityFactor: e.Job.CapacityFactor, LoadImbalance: max(e.Job.LoadImbalance, 1), TokensPerExpert: e.TokensPerExpert, Dispatch: dispatch(e)}
	x.Format = string(e.Job.Quantization.Format())
	if e.Job.Quantization == cost.QuantNone || e.Job.UnquantizedExperts() {
		x.Format = string(hw.BF16)
	}
	for _, c := range e.Comms {
		if c.Axis == mesh.Expert {
			x.AllToAllICI += c.ICITime.Seconds()
			x.AllToAllDCN += c.DCNTime.Seconds()
			x.AllToAllBytes += int64(c.ICIBytes + c.DCNBytes)
		}
	}
	return x
}

// LayoutJSON is a mesh.
type LayoutJSON struct {
	Spec string        `json:"spec"`
	Axes []mesh.Degree `json:"axes"`
	// DeviceSpec and DeviceAxes are the layout in JAX devices, as MaxText
	// counts them and the {mesh} option takes it (Plan.Devices); absent
	// when no MaxText mesh carries a chip's devices.
	DeviceSpec string        `json:"device_spec,omitempty"`
	DeviceAxes []mesh.Degree `json:"device_axes,omitempty"`
}

// MemoryJSON is HBM used per chip by component.
type MemoryJSON struct {
	Weights     int64 `json:"weights_bytes"`
	Gradients   int64 `json:"gradients_bytes"`
	Optimizer   int64 `json:"optimizer_bytes"`
	Activations int64 `json:"activations_bytes"`
	Transient   int64 `json:"transient_bytes"`
	Total       int64 `json:"total_bytes"`
	// Peak names the largest phase, whose buffers Transient is; Phases
	// lists every phase's buffers.
	Peak   string       `json:"peak_phase"`
	Phases []cost.Phase `json:"phases"`
	// XLAReport is what XLA's memory report of the step should read, per
	// JAX device as XLA prints it (Plan.XLAReport; every other count here
	// is per chip), and XLARecomputes whether XLA recomputes to get there.
	XLAReport     int64 `json:"xla_report_bytes_per_jax_device"`
	XLARecomputes bool  `json:"xla_recomputes"`
	// LaidOut is the pipeline stage whose laid-out peak the report is,
	// where it is not this one (absent otherwise).
	LaidOut *LaidOutJSON `json:"laid_out_stage,omitempty"`
}

// StepOf is a step's time by part as StepJSON spells it, in seconds: the
// one mapping plan --json and validate's step-time report use.
func StepOf(t cost.Time) StepJSON {
	return StepJSON{Compute: t.Compute.Seconds(), Matmuls: t.MXU.Seconds(), Attention: t.Attention.Seconds(),
		Vector: t.Vector.Seconds(), Optimizer: t.Optimizer.Seconds(), Offload: t.Offload.Seconds(),
		ICI: t.ICI.Seconds(), Contention: t.Contention.Seconds(), DCN: t.DCN.Seconds(), Sync: t.Sync.Seconds(),
		Bubble: t.Bubble.Seconds(), Total: t.Step.Seconds()}
}

// StepJSON is the step time split, in seconds.
type StepJSON struct {
	Compute   float64 `json:"compute_s"`
	Matmuls   float64 `json:"matmuls_s"`
	Attention float64 `json:"attention_s"`
	Vector    float64 `json:"memory_bound_s"`
	Optimizer float64 `json:"optimizer_s"`
	Offload   float64 `json:"host_offload_exposed_s"`
	ICI       float64 `json:"ici_exposed_s"`
	// Contention is the part of ICI that the hidden collectives take
	// from the compute they hide under.
	Contention float64 `json:"ici_contention_s"`
	DCN        float64 `json:"dcn_exposed_s"`
	Sync       float64 `json:"slice_sync_s"`
	Bubble     float64 `json:"bubble_s"`
	Total      float64 `json:"total_s"`
}

// CommJSON is one kind of collective in a step, per chip.
type CommJSON struct {
	Axis       string  `json:"axis"`
	What       string  `json:"what"`
	Op         string  `json:"op"`
	Count      int     `json:"count"`
	ICIBytes   int64   `json:"ici_bytes"`
	DCNBytes   int64   `json:"dcn_bytes"`
	ICISeconds float64 `json:"ici_time_s"`
	DCNSeconds float64 `json:"dcn_time_s"`
	Overlapped bool    `json:"overlapped"`
}

// RejectedJSON counts the layout choices rejected for one reason.
type RejectedJSON struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// JSON returns the plan's machine-readable form, with the options its
// reasons, warnings and rejections name spelt by name (Option.String when
// nil).
func (p Plan) JSON(name func(Option) string) JSON {
	e := p.Best.Estimate
	ms := p.Request.Multislice
	j := JSON{
		Model: p.Request.Model.Name, Params: p.Request.Model.ParamCount().Total(),
		Accelerator: ms.Slice.AcceleratorType(), Topology: ms.Slice.Topology.String(), Slices: ms.Slices, Chips: ms.Chips(),
		Tier: p.Best.Name(), InSlice: p.Best.Tier.In.String(), AcrossSlices: AcrossOf(p.Best.Tier, e.Mesh),
		Layout:  layoutOf(p),
		Devices: ms.Chips() * max(ms.Slice.Chip.JAXDevicesPerChip, 1),
		Seq:     e.Job.Seq, GlobalBatch: e.Job.GlobalBatch, GlobalTokens: e.Job.GlobalBatch * e.Job.Seq, MaxBatch: p.Request.MaxGlobalBatch,
		MicroBatches: e.Job.MicroBatches, Accumulation: accumulation(&e), Remat: string(e.Job.Remat), Schedule: pipelineSchedule(e), Chunks: max(e.Job.Chunks, 1),
		Memory: MemoryJSON{
			Weights: int64(e.Memory.Weights), Gradients: int64(e.Memory.Gradients), Optimizer: int64(e.Memory.Optimizer),
			Activations: int64(e.Memory.Activations), Transient: int64(e.Memory.Transient), Total: int64(e.Memory.Total()),
			Peak: e.Memory.Peak, Phases: e.Memory.Phases,
		},
		HBM: int64(e.Memory.HBM), HBMUsable: int64(e.Memory.Usable), HostOffloaded: int64(e.Memory.Host), HostRAM: int64(e.Memory.HostUsable), Fits: e.Memory.Fits(), MaxMicroBatchBound: boundJSON(p.MaxMicroBatchBound),
		Step:   StepOf(e.Time),
		Bubble: e.Bubble, MFU: e.MFU, MFUPeak: string(hw.BF16), QuantizedMFU: e.QuantizedMFU, MFUCausal: e.Job.CausalFLOPs, MFUOther: e.MFUOther, HFU: e.HFU, Efficiency: e.Job.EfficiencyFor(ms.Slice.Chip), MXU: e.MXUEfficiency, Padding: e.PaddingLoss,
		TokensChip: e.TokensPerSecondPerChip, Tokens: e.TokensPerSecondPerChip * float64(ms.Chips()),
		DCNBytes: int64(e.DCNBytesPerStep), ICIBytesChip: int64(e.ICIBytesPerChip),
		Reasons: phrases(p.Reasons, name), Warnings: phrases(p.Warnings, name), Rejected: []RejectedJSON{}, Evaluated: p.Evaluated,
		Collectives: []CommJSON{}, Top: []RankJSON{}, Alternatives: []RankJSON{}, Experts: expertsOf(e), Band: bandOf(p), Published: p.publishedJSON(),
	}
	cb := p.ChipBatch()
	j.MicroBatch, j.MicroBatchShard, j.PerDeviceBatch = cb.PerChip, cb.PerShard, cb.PerDevice
	j.MaxMicroBatch, j.MaxMicroBatchShard = cb.perChip(p.MaxMicroBatch), p.MaxMicroBatch
	report, squeezed := p.XLAReport()
	j.Memory.XLAReport, j.Memory.XLARecomputes, j.Memory.LaidOut = int64(report), squeezed, laidOutJSON(e.Memory)
	if q := e.Job.Quantization; q != cost.QuantNone {
		j.QuantizedMFUPeak, j.QuantizedHFU = string(q.Format()), quantizedHFU(e)
	}
	for _, c := range e.Comms {
		j.Collectives = append(j.Collectives, CommJSON{Axis: c.Axis.String(), What: c.What, Op: c.Op.String(), Count: c.Count,
			ICIBytes: int64(c.ICIBytes), DCNBytes: int64(c.DCNBytes), ICISeconds: c.ICITime.Seconds(), DCNSeconds: c.DCNTime.Seconds(),
			Overlapped: c.Overlapped})
	}
	for k, v := range p.Rejected {
		j.Rejected = append(j.Rejected, RejectedJSON{Reason: phrase(string(k), name), Count: v})
	}
	sort.Slice(j.Rejected, func(a, b int) bool { return j.Rejected[a].Reason < j.Rejected[b].Reason })
	for _, c := range p.Top {
		j.Top = append(j.Top, rank(c))
	}
	for _, c := range p.Alternatives {
		j.Alternatives = append(j.Alternatives, rank(c))
	}
	return j
}

// quantizedHFU is e's HFU against the peak its quantized matmuls run at,
// by the ratio of the two peaks that cost's MFU and QuantizedMFU hold.
func quantizedHFU(e cost.Estimate) float64 {
	if e.MFU == 0 {
		return 0
	}
	return e.HFU * e.QuantizedMFU / e.MFU
}

func quantNote(j cost.Job) string {
	if j.Quantization == cost.QuantNone {
		return ""
	}
	return ", " + string(j.Quantization) + " matmuls"
}

func attentionName(j cost.Job) string {
	switch j.Attention {
	case cost.AttentionDot:
		return "dot-product"
	case cost.AttentionFlashNonCausal:
		return "flash (every block, no causal skip)"
	}
	return "flash"
}

// phrases spells notes with name.
func phrases(notes []Note, name func(Option) string) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.Phrase(name)
	}
	return out
}

// efficiencySource is a text that names options.
func efficiencySource(p Plan) string {
	switch {
	case p.Best.Estimate.Job.Efficiency > 0:
		return "{efficiency}"
	case p.Request.Framework == FrameworkPyTorch:
		return PyTorchEfficiency
	}
	return "calibrated for the generation; shardlab validate"
}

// WriteJSON writes the plan as one indented JSON object, with the options
// spelt by name (Option.String when nil).
func (p Plan) WriteJSON(w io.Writer, name func(Option) string) error {
	return schema.Write(w, p.JSON(name))
}

// WriteText writes the plan as a report for people, with the options its
// reasons and warnings name spelt by name (Option.String when nil).
func (p Plan) WriteText(w io.Writer, name func(Option) string) error {
	var b strings.Builder
	e := p.Best.Estimate
	r := p.Request
	spec := r.Model
	fmt.Fprintf(&b, "%s (%.1fB parameters) on %s\n", spec.Name, float64(spec.ParamCount().Total())/1e9, r.Multislice)
	fmt.Fprintf(&b, "  batch %s x %s = %s tokens per step (limit %s)\n\n",
		unit.Plural(e.Job.GlobalBatch, "sequence"), unit.Plural(e.Job.Seq, "token"), count(float64(e.Job.GlobalBatch*e.Job.Seq)), unit.Plural(r.MaxGlobalBatch, "sequence"))
	p.writeLayout(&b)
	writeMemory(&b, p)
	p.writeTime(&b, name)
	p.writePublished(&b)
	writeComms(&b, e.Comms)
	p.writeNotes(&b, name)
	_, err := io.WriteString(w, trimLines(b.String()))
	return err
}

// writeLayout writes the axes, the remat policy, the pipeline and the
// precision.
func (p Plan) writeLayout(b *strings.Builder) {
	e := p.Best.Estimate
	fmt.Fprintf(b, "Layout: %s  [%s]\n", e.Mesh, p.Best.Name())
	if per := p.Request.Multislice.Slice.Chip.JAXDevicesPerChip; per > 1 {
		if d, err := p.Devices(); err == nil {
			fmt.Fprintf(b, "  in JAX devices, as MaxText counts them: %s, %s; each chip's %d devices on %s\n", d, d.Count(), per, d.InChip)
		} else {
			fmt.Fprintf(b, "  in JAX devices: %s, and no MaxText mesh: %s\n", deviceCount(p.Request.Multislice), errtext.Detail(err))
		}
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  axis\tICI\tDCN\ttotal\t")
	for _, d := range e.Mesh.Degrees() {
		if d.Axis == mesh.Expert && d.Size() == 1 && !e.Job.Model.MoE() {
			continue // a dense layout has no experts to split
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t\n", d.Axis, d.ICI, d.DCN, d.Size())
	}
	tw.Flush()
	micro := microText(&e)
	remat := string(e.Job.Remat)
	if e.Job.Remat == cost.RematCustom {
		remat += " (" + e.Job.Custom.String() + ")"
	}
	fmt.Fprintf(b, "  remat %s, %s, %s\n", remat, micro, p.ChipBatch().Text())
	fmt.Fprintf(b, "  precision %s%s, %s attention\n\n", e.Job.Precision.Name(), quantNote(e.Job), attentionName(e.Job))
}

// microText names e's micro-batches: a pipeline's, under its schedule;
// without a pipeline, gradient accumulation's (MaxText
// gradient_accumulation_steps), or none.
func microText(e *cost.Estimate) string {
	n := unit.Plural(e.Job.MicroBatches, "micro-batch")
	switch {
	case e.Mesh.Size(mesh.Pipeline) > 1 && e.Job.Schedule.Chunked():
		return fmt.Sprintf("%s (%s, %s per device)", n, e.Job.Schedule, unit.Plural(max(e.Job.Chunks, 1), "chunk"))
	case e.Mesh.Size(mesh.Pipeline) > 1:
		return fmt.Sprintf("%s (%s)", n, e.Job.Schedule)
	case accumulation(e) > 0:
		return "gradient accumulation " + n
	}
	return "no pipeline"
}

// accumulation is e's gradient accumulation steps: its micro-batches
// without a pipeline, or 0 (none) for one pass or a pipeline's.
func accumulation(e *cost.Estimate) int {
	if e.Mesh.Size(mesh.Pipeline) > 1 || e.Job.MicroBatches <= 1 {
		return 0
	}
	return e.Job.MicroBatches
}

// bound names what stops the batch (MaxMicroBatchBound): as plan JSON
// names it, and in the text's words.
func bound(r cost.Reason) (name, words string) {
	switch r {
	case cost.ReasonHBM:
		return "hbm", "HBM"
	case cost.ReasonHost:
		return "host_memory", "host memory"
	}
	return "batch_limit", "the batch limit"
}

// boundJSON is bound's JSON name.
func boundJSON(r cost.Reason) string {
	name, _ := bound(r)
	return name
}

// writeTime writes the step time by part, the efficiencies, MFU and
// traffic.
func (p Plan) writeTime(b *strings.Builder, name func(Option) string) {
	e := p.Best.Estimate
	ms := p.Request.Multislice
	st := e.Time.Step
	band, banded := p.PredictionBand()
	fmt.Fprintf(b, "\nStep time: %s\n", p.stepBand())
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, c := range []struct {
		name string
		v    time.Duration
	}{{"compute", e.Time.Compute}, {"  matmuls", e.Time.MXU}, {"  attention", e.Time.Attention}, {"  memory-bound", e.Time.Vector},
		{"  optimizer", e.Time.Optimizer}, {"  host offload", e.Time.Offload},
		{"ICI (exposed)", e.Time.ICI}, {"  contention", e.Time.Contention}, {"DCN (exposed)", e.Time.DCN}, {"slice sync", e.Time.Sync}, {"pipeline bubble", e.Time.Bubble}} {
		if c.name == "slice sync" && c.v == 0 {
			continue
		}
		if strings.HasPrefix(c.name, " ") && c.v == 0 {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%5.1f%%\n", c.name, dur(c.v), 100*c.v.Seconds()/st.Seconds())
	}
	tw.Flush()
	fmt.Fprintf(b, "  MXU efficiency %.1f%% (padding loss %.1f%%) x %.0f%% residual efficiency (%s)\n",
		100*e.MXUEfficiency, 100*e.PaddingLoss, 100*e.Job.EfficiencyFor(ms.Slice.Chip), phrase(efficiencySource(p), name))
	hfu := fmt.Sprintf("%.1f%% (of the %s peak)", 100*e.HFU, hw.BF16)
	if q := e.Job.Quantization; q != cost.QuantNone {
		// as validate's table: against the format's peak too, after the slash
		hfu = fmt.Sprintf("%.1f%% / %.1f%% %s (of the %s peak / of the %s peak)", 100*e.HFU, 100*quantizedHFU(e), q.Format(), hw.BF16, q.Format())
	}
	fmt.Fprintf(b, "  MFU %.1f%%  HFU %s  %s tokens/s per chip  %s tokens/s in all\n",
		100*e.MFU, hfu, count(e.TokensPerSecondPerChip), count(e.TokensPerSecondPerChip*float64(ms.Chips())))
	if banded {
		mlo, mhi := band.Rate(e.MFU)
		tlo, thi := band.Rate(e.TokensPerSecondPerChip)
		n := float64(ms.Chips())
		fmt.Fprintf(b, "  in the band: MFU %.1f-%.1f%%, %s-%s tokens/s per chip, %s-%s tokens/s in all\n",
			100*mlo, 100*mhi, count(tlo), count(thi), count(tlo*n), count(thi*n))
		p.writeBandMisses(b)
	}
	if q := e.Job.Quantization; q != cost.QuantNone {
		bf16 := "the attention core and the output layer run"
		if e.Job.UnquantizedExperts() {
			bf16 = "the attention core, the output layer and the routed experts, which MaxText's qwix rules do not quantize here, run"
		}
		fmt.Fprintf(b, "  MFU %.1f%% of the %s peak, which the %s matmuls run at (%s at the %s peak)\n",
			100*e.QuantizedMFU, q.Format(), q, bf16, hw.BF16)
	}
	fmt.Fprintf(b, "  %s\n", phrase(mfuConvention(e), name))
	fmt.Fprintf(b, "  DCN traffic %v per step (all chips); ICI %v per chip\n", e.DCNBytesPerStep, e.ICIBytesPerChip)
	if x := expertsOf(e); x != nil {
		writeExperts(b, x)
	}
}

// writeExperts writes the experts line: the routing, and the dispatch's
// collectives on the critical path, or that none runs (DispatchNone).
func writeExperts(b *strings.Builder, x *ExpertsJSON) {
	routing := "dropless (sparse_matmul, megablox)"
	if x.CapacityFactor > 0 {
		routing = fmt.Sprintf("capacity factor %g", x.CapacityFactor)
	}
	exchange := fmt.Sprintf("%s %s ICI + %s DCN (%v per chip per step, on the critical path)",
		x.Dispatch, dur(secondsOf(x.AllToAllICI)), dur(secondsOf(x.AllToAllDCN)), unit.Bytes(x.AllToAllBytes))
	if x.Dispatch == DispatchNone {
		exchange = "no dispatch collective (no expert axis: each device routes its own tokens)"
	}
	fmt.Fprintf(b, "  experts: %d, %d per token, over %s, %s, load imbalance %g: %s tokens per expert per chip per micro-batch; %s\n",
		x.Experts, x.PerToken, mesh.Degree{Axis: mesh.Expert, ICI: x.Degree, DCN: 1}, routing, x.LoadImbalance, count(x.TokensPerExpert), exchange)
}

// stepBand is the step time with its band and the band's name, or the
// step time alone, saying so where the band is withheld.
func (p Plan) stepBand() string {
	e := p.Best.Estimate
	st := e.Time.Step
	if band, ok := p.PredictionBand(); ok {
		lo, hi := band.Step(st.Seconds())
		return fmt.Sprintf("%s (%s, %s)", dur(st), span(unit.Seconds(lo).String(), unit.Seconds(hi).String()), bandName(band, e.Job, p.Request.Multislice.Slice.Chip.Generation))
	}
	if _, withheld := p.bandWithheld(); withheld {
		return dur(st) + " (no error band: see the warnings)"
	}
	return dur(st)
}

func secondsOf(s float64) time.Duration { return time.Duration(s * 1e9) }

// span is "lo-hi" from the two as printed, the unit once when they share
// it ("11.9-14.2 s"), one number when both print alike.
func span(los, his string) string {
	if los == his {
		return los
	}
	if i, k := strings.LastIndexByte(los, ' '), strings.LastIndexByte(his, ' '); i > 0 && k > 0 && los[i:] == his[k:] {
		los = los[:i]
	}
	return los + "-" + his
}

// writeComms writes the collectives per chip per step.
func writeComms(b *strings.Builder, comms []cost.Comm) {
	if len(comms) == 0 {
		return
	}
	fmt.Fprintf(b, "\nCollectives per chip per step:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  axis\twhat\tcount\tICI bytes\tDCN bytes\ttime\t")
	for _, c := range comms {
		ov := "on the critical path"
		if c.Overlapped {
			ov = "overlapped"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%v\t%v\t%s\t%s\n", c.Axis, c.What, c.Count, c.ICIBytes, c.DCNBytes, dur(c.ICITime+c.DCNTime), ov)
	}
	tw.Flush()
}

// writeNotes writes the reasons, warnings, ranked layouts and rejections.
func (p Plan) writeNotes(b *strings.Builder, name func(Option) string) {
	fmt.Fprintf(b, "\nWhy:\n")
	for _, n := range p.Reasons {
		fmt.Fprintf(b, "  - %s\n", n.Phrase(name))
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintf(b, "\nWarnings:\n")
		for _, n := range p.Warnings {
			fmt.Fprintf(b, "  - %s\n", n.Phrase(name))
		}
	}
	if len(p.Top) > 1 {
		fmt.Fprintf(b, "\nTop %d:\n", len(p.Top))
		table(b, p.Top)
	}
	if len(p.Alternatives) > 0 {
		fmt.Fprintf(b, "\nBest of the tiers the rules did not choose:\n")
		table(b, p.Alternatives)
	}
	fmt.Fprintf(b, "\n%s costed", unit.Plural(p.Evaluated, "layout choice"))
	if len(p.Rejected) > 0 {
		rs := make([]RejectedJSON, 0, len(p.Rejected))
		for k, v := range p.Rejected {
			rs = append(rs, RejectedJSON{Reason: phrase(string(k), name), Count: v})
		}
		fmt.Fprintf(b, "; rejected: %s", RejectedWords(rs))
	}
	b.WriteString("\n")
}

// trimLines drops the padding tabwriter leaves at the ends of lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// dur prints a duration in the one text format (unit.Seconds).
func dur(d time.Duration) string { return unit.Seconds(d.Seconds()).String() }

// count prints a count with a k/M/G suffix.
func count(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// mfuConvention says how MFU counts attention and what the other
// convention gives, as a text that names options.
func mfuConvention(e cost.Estimate) string {
	if e.Job.CausalFLOPs {
		return textf("MFU counts causal attention as half its FLOPs, MaxText's convention; in full (PaLM's, {causal_flops}=false) it is %.1f%% of the %s peak", 100*e.MFUOther, hw.BF16)
	}
	return textf("MFU counts attention in full (PaLM's convention); halved for the causal mask (MaxText's, {causal_flops}) it is %.1f%% of the %s peak", 100*e.MFUOther, hw.BF16)
}
