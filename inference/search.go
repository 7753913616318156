package inference

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/internal/braces"
	"shardlab/unit"
)

// Candidates are the (TP, DP) layouts a request is searched over: every
// tensor-parallel size (or the request's) with the replicas that fill the
// slice, TP·DP = its devices, or the request's replicas. Replicas sharing
// a chip unevenly are left out.
func Candidates(r Request) [][2]int {
	per := r.Slice.Chip.JAXDevicesPerChip
	devices := r.Slice.Chips() * per
	tps := tpSizes(r.Model, r.Slice, r.AttentionDP())
	if r.TP != 0 {
		tps = []int{r.TP}
	}
	var out [][2]int
	for _, tp := range tps {
		dp := devices / tp
		if r.DP > 0 {
			dp = r.DP
		}
		if dp < 1 || tp*dp > devices || (dp > 1 && tp*dp%per != 0) {
			continue
		}
		out = append(out, [2]int{tp, dp})
	}
	return out
}

// better orders two layouts for r: those that fit first, then those
// whose pages hold their sequences without preemption (of two that
// preempt, the one whose replicas' pages hold the most), then (under a
// request rate) those whose pages hold the cap AtRate sizes them for,
// then those that meet the SLOs, then by the objective (throughput: the most output
// tokens/s per chip, then the least ITL; latency: the least ITL, then
// TTFT, then the most tokens/s per chip), then the fewest chips. Under a
// request rate every layout that keeps up serves the offered tokens/s
// (AtRate), so the throughput objective takes the fewest chips (the most
// tokens/s per chip), then the least ITL.
func (r Request) better(a, b Layout) bool {
	if a.Fits != b.Fits {
		return a.Fits
	}
	if a.Preempts != b.Preempts {
		return b.Preempts // the rooflines assume no preemption
	}
	if ha, hb := a.DP*a.Memory.HeldSeqs, b.DP*b.Memory.HeldSeqs; a.Preempts && ha != hb {
		return ha > hb // both preempt: the one whose pages hold the most
	}
	if a.ShortOfCap != b.ShortOfCap {
		return b.ShortOfCap // under a rate, the layouts whose pages hold the cap
	}
	if a.MeetsSLO() != b.MeetsSLO() {
		return a.MeetsSLO()
	}
	ta, ia := r.Seen(a)
	tb, ib := r.Seen(b)
	if r.Objective == Latency {
		if ia != ib {
			return ia < ib
		}
		if ta != tb {
			return ta < tb
		}
	}
	if a.PerChip != b.PerChip {
		return a.PerChip > b.PerChip
	}
	if ia != ib {
		return ia < ib
	}
	return a.Chips < b.Chips
}

// slos names the request's SLOs.
func (r Request) slos() string {
	var s []string
	if r.TTFTSLO > 0 {
		s = append(s, fmt.Sprintf("TTFT ≤ %v", secs(r.TTFTSLO)))
	}
	if r.ITLSLO > 0 {
		s = append(s, fmt.Sprintf("ITL ≤ %v", secs(r.ITLSLO)))
	}
	return strings.Join(s, " and ")
}

// Search costs every candidate layout on the request's TPU and chooses one
// by the request's objective among those that fit and meet its SLOs. When
// some fit but none meets the SLOs, the plan is the best effort by the
// same order, marked BestEffort with a warning naming what it misses;
// when none fits, Search returns a *NoFitError (ErrNoFit).
func Search(r Request) (Plan, error) {
	p := Plan{Request: r, Layouts: costed(r)}
	if len(p.Layouts) == 0 || !p.Layouts[0].Fits {
		return p, noFit(r, p.Layouts)
	}
	b := p.Layouts[0]
	if err := r.schedulerBudget(b); err != nil {
		return p, err
	}
	p.Best = b
	p.BestEffort = !b.MeetsSLO()
	p.Reasons = append(p.Reasons, objectiveReason(r, b))
	if b.ShortOfCap {
		p.Warnings = append(p.Warnings, shortWarning(r, b))
	} else if r.RequestRate > 0 {
		p.Reasons = append(p.Reasons, admitReason(r, b))
	}
	p.Reasons = append(p.Reasons, chipsReason(r, b))
	for _, s := range []string{r.mixReason(), checkpointReason(r)} {
		if s != "" {
			p.Reasons = append(p.Reasons, s)
		}
	}
	if b.Preempts {
		p.Warnings = append(p.Warnings, preemptWarning(r, b))
	}
	if p.BestEffort {
		p.Warnings = append(p.Warnings, fmt.Sprintf("no layout meets %s at %s: best effort shown, which misses %s", r.slos(), b.Load(), strings.Join(b.Misses, " and ")))
	}
	p.Reasons = append(p.Reasons, shardReason(r, b))
	if r.Model.Windowed() {
		p.Reasons = append(p.Reasons, windowReason(r, b))
	}
	reasons, warnings := hostNotes(r, b)
	p.Reasons, p.Warnings = append(p.Reasons, reasons...), append(p.Warnings, warnings...)
	if n := b.RunningSeqs(); r.RequestRate == 0 && n < b.DP {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d of the %d replicas are idle at %s: they hold chips but serve no tokens; a smaller {data_parallel_size} frees them", b.DP-n, b.DP, b.Load()))
	}
	p.Warnings = append(p.Warnings, hardwareWarnings(r, p)...)
	p.Warnings = append(p.Warnings, modelWarnings(r, b)...)
	if b.DecodeCompute > b.DecodeMemory {
		p.Warnings = append(p.Warnings, "decode is compute-bound at this concurrency: the ITL is the MXU roofline")
	}
	return p, nil
}

// schedulerBudget refuses a token budget below the max_num_seqs that
// b's serving command gives each of its schedulers, as vLLM refuses it:
// SchedulerConfig.verify_max_model_len raises "max_num_batched_tokens
// (…) must be greater than or equal to max_num_seqs (…)"
// (vllm-project/vllm vllm/config/scheduler.py @1f8758d584e8, called from
// SchedulerConfig.__post_init__). Its other rule, a budget of at least
// max_model_len, holds only with chunked prefill off; SchedulerConfig
// turns it on by default and the serving command leaves it on, so any
// budget from max_num_seqs up is accepted (a budget above max_num_seqs ×
// max_model_len only draws a logged warning there).
func (r Request) schedulerBudget(b Layout) error {
	seqs := b.SchedulerSeqs()
	if r.MaxNumBatchedTokens >= seqs {
		return nil
	}
	ranks := ""
	if b.AttentionDP > 1 {
		ranks = fmt.Sprintf(", %d sequences a replica over %d attention-DP schedulers", b.SeqsEach, b.AttentionDP)
	}
	value := strconv.Itoa(r.MaxNumBatchedTokens)
	if !r.MaxNumBatchedTokensGiven && r.MaxNumBatchedTokens == DefaultRequest().MaxNumBatchedTokens {
		value += " (the default)"
	}
	cause := ""
	if r.MaxNumSeqs > 0 {
		cause = fmt.Sprintf(", from the {max_num_seqs} %d given", r.MaxNumSeqs)
	}
	return &FieldError{Field: "max_num_batched_tokens", Value: value, Want: fmt.Sprintf(
		"%d to %d: vLLM refuses a token budget below max_num_seqs, which the chosen layout (TP %d × DP %d) runs at %d%s%s (vllm/config/scheduler.py SchedulerConfig.verify_max_model_len)",
		seqs, MaxTokens, b.TP, b.DP, seqs, ranks, cause)}
}

// objectiveReason says why b was chosen.
func objectiveReason(r Request, b Layout) string {
	ttft, itl := r.Seen(b)
	what := fmt.Sprintf("most output tokens/s per chip (%.0f) at %s", b.PerChip, b.Load())
	if r.RequestRate > 0 {
		what = fmt.Sprintf("serves the offered %.0f output tokens/s (%.0f per chip) at %s on average; the least inter-token latency at the load (mean %v) of the layouts that keep up on the fewest chips",
			b.TokensPerSecond, b.PerChip, b.Load(), secs(itl))
	}
	if r.Objective == Latency {
		what = fmt.Sprintf("least inter-token latency (%v, TTFT %v) at %s", secs(itl), secs(ttft), b.Load())
		if r.RequestRate > 0 {
			what = fmt.Sprintf("least inter-token latency at the load (mean %v, TTFT mean %v) at %s on average", secs(itl), secs(ttft), b.Load())
		}
	}
	if s := r.slos(); s != "" && b.MeetsSLO() {
		what += " among the layouts that meet " + s
	}
	return what
}

// chipsReason says how much of the slice b uses.
func chipsReason(r Request, b Layout) string {
	all := r.Slice.Chips()
	if b.Chips == all {
		return fmt.Sprintf("uses all %s of %s (%d JAX devices = TP %d × DP %d)", pluralChips(all), r.Slice.AcceleratorType(), b.Devices(), b.TP, b.DP)
	}
	return fmt.Sprintf("uses %d of %s's %s, as the request fixes (tensor_parallel_size %d × data_parallel_size %d); the other %s idle",
		b.Chips, r.Slice.AcceleratorType(), pluralChips(all), b.TP, b.DP, pluralChips(all-b.Chips))
}

func pluralChips(n int) string {
	if n == 1 {
		return "1 chip"
	}
	return fmt.Sprintf("%d chips", n)
}

// shardReason says what each device holds.
func shardReason(r Request, b Layout) string {
	m := r.Model
	heads := fmt.Sprintf("TP %d: %s", b.TP, kvHeadsPerDevice(m, b.TP))
	if DPAttention(m) {
		heads = fmt.Sprintf("TP %d as attention data parallelism (latent attention, enable_dp_attention): each device holds the attention weights whole and the latent KV of its own sequences", b.TP)
	} else if r.AttentionDP() {
		heads = fmt.Sprintf("TP %d as attention data parallelism (enable_dp_attention): each device holds the attention weights whole and the %d KV heads of its own sequences", b.TP, m.KV())
	}
	if m.MoE() {
		if b.EP > 1 {
			heads += fmt.Sprintf("; expert parallel %d: %d of %d routed experts per device, a decode step of %d sequences touching %.1f of them a layer", b.EP, m.Experts/b.EP, m.Experts, b.Running(), b.ActiveExperts)
		} else {
			heads += fmt.Sprintf("; the %d routed experts split along their width (a decode step of %d sequences touching %.1f a layer)", m.Experts, b.Running(), b.ActiveExperts)
		}
	}
	return fmt.Sprintf("%s; each device holds %v of weights, and the replica's pages hold %s of %s at once (%d of max_model_len %d, of which vLLM needs one to start)",
		heads, b.Memory.Weights, unit.Plural(b.Memory.HeldSeqs, "sequence"), r.heldLengths(), b.Memory.MaxSeqs, r.MaxModelLen)
}

// preemptWarning says that b's pages do not hold its sequences at their
// full length at once, so that vLLM preempts some of them [v-alloc].
func preemptWarning(r Request, b Layout) string {
	return fmt.Sprintf("preemption: a replica's pages hold %d sequences of %s at once, fewer than the %d it runs (max_num_seqs): vLLM allocates pages as sequences grow and, when they run out, preempts the last running sequence to recompute it later (vllm/v1/core/sched/scheduler.py); the latencies above assume none",
		b.Memory.HeldSeqs, r.heldLengths(), b.SeqsEach)
}

// hardwareWarnings are what p's plan leaves out of the TPU it runs on:
// the collectives between a chip's devices (inChipWarning), and a
// generation tpu-inference lists as experimental.
func hardwareWarnings(r Request, p Plan) []string {
	var out []string
	if w := inChipWarning(r, p); w != "" {
		out = append(out, w)
	}
	if g := r.Slice.Chip.Generation; Experimental(g) {
		out = append(out, fmt.Sprintf("%s: tpu-inference lists %s as experimental, not recommended (README.md \"Compatible TPU Generations\" @b8692ff0: recommended v7x, v5e, v6e; experimental v3, v4, v5p), and no published %s serving run is in validate's serving table to hold this plan to", g, g, g))
	}
	return out
}

// modelWarnings are what the serving command needs beyond its flags.
func modelWarnings(r Request, b Layout) []string {
	var out []string
	if n := kvReplicas(r.Model, b.TP); n > 1 && !r.AttentionDP() {
		out = append(out, fmt.Sprintf("TP %d is above the %d KV heads: tpu-inference replicates each KV head ×%d, one a device (utils.py get_padded_num_heads, attention_interface.py), so a token's %s KV takes %v per device, as much as at TP %d, and each device reads it all in a decode step",
			b.TP, r.Model.KV(), n, r.KVCache, b.Memory.KVPerToken, min(KVUsefulSplit(r.Model, r.KVCache), r.Model.KV())))
	} else if b.TP > kvUsefulSplit(r.Model, r.KVCache, r.AttentionDP()) {
		out = append(out, fmt.Sprintf("TP %d is beyond the KV cache's useful split (%d = 2·%d KV heads / %d %s elements per 32-bit word): each device's page rows are padded to whole words, so a token's %s KV takes %v per device, as much as at TP %d",
			b.TP, KVUsefulSplit(r.Model, r.KVCache), r.Model.KV(), r.KVCache.packing(), r.KVCache, r.KVCache, b.Memory.KVPerToken, KVUsefulSplit(r.Model, r.KVCache)))
	}
	if w := checkpointWarning(r); w != "" {
		out = append(out, w)
	}
	if w := weightsWarning(r); w != "" {
		out = append(out, w)
	}
	if c := r.Model.AttentionChunk; c > 0 && r.MaxModelLen > c {
		out = append(out, fmt.Sprintf("chunked attention: %s attends within chunks of %d tokens in its RoPE layers, 3 in 4 (its config.json's attention_chunk_size), and tpu-inference's JAX Llama 4 applies a fixed 8192 instead as a sliding window of its other layers, 1 in 4 (models/jax/llama4.py 579 @b8692ff0); this plan models neither: beyond %d tokens it costs every layer's attention over the whole context, more than those layers compute and read",
			braces.Literal(r.Model.Name), c, c))
	}
	if DPAttention(r.Model) {
		out = append(out, "latent attention: tpu-inference needs NEW_MODEL_DESIGN=1 in the server's environment and enable_dp_attention in --additional-config (tpu_platform.py); the page size is left to tpu-inference, which sets 1024 tokens for latent attention only where --block-size is not given (tpu_platform.py, flash_attn_mla.py)")
	}
	if b.EP > 1 {
		out = append(out, "expert parallelism: experts are costed by the average routed load; the busiest device of a step may read more")
	}
	return out
}

// checkpointWarning says that the checkpoint vllm serve loads is not the
// model's own repository, whose format the catalog records
// (model.Spec.HFDtype), and that its format was not given: shardlab reads
// no checkpoint, so the plan takes the catalog's format for it (a local
// copy of DeepSeek-V3 is fp8 as the released one is), and names the
// option that states another ({checkpoint_dtype}, which Plan.Phrase
// spells); or that the format given for the model's own repository is
// not the one the catalog records. "" for the model's own repository or
// a case variant of it (Hugging Face ids are case-insensitive), and for
// another whose format is given.
func checkpointWarning(r Request) string {
	catalog := Dtype(r.Model.HFDtype)
	if catalog == "" {
		catalog = BF16
	}
	name, own, hf := braces.Literal(r.Model.Name), braces.Literal(r.Model.HFModel), braces.Literal(r.HFModel)
	switch {
	case ownRepository(r) && r.CheckpointGiven && r.Checkpoint != catalog && r.Model.HFModel != "":
		return fmt.Sprintf("checkpoint: {checkpoint_dtype} is %s, but the catalog records %s for %s's own repository %s%s: the plan takes the %s given",
			r.Checkpoint, catalog, name, own, catalogSource(r), r.Checkpoint)
	case ownRepository(r) || r.CheckpointGiven:
		return ""
	case r.Model.HFModel == "":
		return fmt.Sprintf("checkpoint: the catalog records no checkpoint of %s, and shardlab does not read %s's config.json: its weights are taken to be stored in %s; if they are stored in another format, set {checkpoint_dtype} to it",
			name, hf, r.Checkpoint)
	}
	return fmt.Sprintf("checkpoint: %s is not %s's own repository %s, and shardlab does not read its config.json: the checkpoint's format is taken from the catalog, %s as %s stores its weights%s; if %s stores another format, set {checkpoint_dtype} to it",
		hf, name, own, r.Checkpoint, own, catalogSource(r), hf)
}

// ownRepository says that vllm serve loads the model's own repository:
// HFModel is unset or names it in any case, as the Hugging Face Hub
// resolves a repository id whatever its case ("repo ids are case
// insensitive across the Hub": huggingface/huggingface_hub issue #2090,
// a maintainer's comment of 2024-03-06; issue #1453 shows
// mbzuai/bactrian-x answered as MBZUAI/Bactrian-X).
func ownRepository(r Request) bool {
	return r.HFModel == "" || r.Model.HFModel != "" && strings.EqualFold(r.HFModel, r.Model.HFModel)
}

// catalogSource is where the catalog has the format of the model's own
// repository from, " (source)", or "".
func catalogSource(r Request) string {
	if r.Model.HFDtypeSource == "" {
		return ""
	}
	return " (" + braces.Literal(r.Model.HFDtypeSource) + ")"
}

// checkpointSource is where the plan has the checkpoint's format from:
// the option that gives it, or the catalog's source.
func checkpointSource(r Request) string {
	if r.CheckpointGiven {
		return " (as {checkpoint_dtype} gives it)"
	}
	return catalogSource(r)
}

// weightsWarning says what serving weights other than the checkpoint's
// takes: vLLM reads a quantized checkpoint's format from its config.json
// (quantization_config) and loads its weights so; "" when the weights
// are the checkpoint's, as given or as the catalog records it.
func weightsWarning(r Request) string {
	switch {
	case r.Weights == r.Checkpoint:
		return ""
	case r.Checkpoint == BF16:
		return fmt.Sprintf("%s weights: vllm serve needs a %s checkpoint or tpu-inference's qwix quantization rules in --additional-config; the command below sets neither", r.Weights, r.Weights)
	}
	return fmt.Sprintf("%s weights: the checkpoint stores %s%s, and vLLM loads it so (its config.json's quantization_config); the command below serves %s, not the %s costed here, unless it is given a %s copy of the checkpoint",
		r.Weights, r.Checkpoint, checkpointSource(r), r.Checkpoint, r.Weights, r.Weights)
}

// checkpointReason says that the weights are a quantized checkpoint's
// own, and where the plan has that from; "" for bf16 or other weights.
func checkpointReason(r Request) string {
	if r.Weights != r.Checkpoint || r.Checkpoint == BF16 {
		return ""
	}
	return fmt.Sprintf("%s weights: the checkpoint's own%s, which vLLM loads as they are", r.Weights, checkpointSource(r))
}
