package export

import "shardlab/inference"

// ServingJSON is a serving plan as JSON (shardlab inference --json, the
// web page's download): the request, the chosen layout and every layout
// costed, the reasons and warnings, and the vllm serve line. Keys carry
// their units.
type ServingJSON struct {
	Model       string `json:"model"`
	TPU         string `json:"accelerator_type"`
	MaxModelLen int    `json:"max_model_len_tokens"`
	// Concurrency is the sequences that run at once across the
	// replicas (inference.Layout.RunningSeqs), Clients the closed loop's
	// clients when the request gives them beside max_num_seqs (absent
	// otherwise; those above what runs wait in the scheduler's queue).
	Concurrency int     `json:"concurrency_sequences"`
	Clients     int     `json:"clients,omitempty"`
	RequestRate float64 `json:"request_rate_per_s,omitempty"`
	PromptLen   int     `json:"prompt_len_tokens"`
	OutputLen   int     `json:"output_len_tokens"`
	Weights     string  `json:"weights_dtype"`
	// Checkpoint is the format the checkpoint vllm serve loads stores its
	// weights in, as the plan assumed it (inference.Request.Checkpoint),
	// and CheckpointGiven whether the caller stated it; else it is the
	// model catalog's record of the model's own repository.
	Checkpoint      string       `json:"checkpoint_dtype"`
	CheckpointGiven bool         `json:"checkpoint_dtype_given"`
	KVCache         string       `json:"kv_cache_dtype"`
	Utilization     float64      `json:"gpu_memory_utilization_fraction"`
	Objective       string       `json:"objective"`
	TTFTSLO         float64      `json:"ttft_slo_s,omitempty"`
	ITLSLO          float64      `json:"itl_slo_s,omitempty"`
	BestEffort      bool         `json:"best_effort"`
	Layout          LayoutJSON   `json:"layout"`
	Layouts         []LayoutJSON `json:"layouts"`
	Reasons         []string     `json:"reasons"`
	Warnings        []string     `json:"warnings"`
	Command         []string     `json:"vllm_serve_args"`
	CommandLine     string       `json:"vllm_serve_command"`
	// HeldOutBand is the chosen layout's roofline throughput at the ends
	// of its error on validate's held-out serving rows of the requests'
	// length class (inference.ServingBand.Roofline); absent where none.
	HeldOutBand *BandJSON `json:"held_out_band,omitempty"`
	// Simulation is the front end's simulation of the plan, if it ran
	// one (the CLI's inference.Simulate).
	Simulation any `json:"simulation,omitempty"`
}

// LayoutJSON is one serving layout in ServingJSON.
type LayoutJSON struct {
	TP             int `json:"tensor_parallel_size"`
	DP             int `json:"data_parallel_size"`
	EP             int `json:"expert_parallel_size"`
	AttentionDP    int `json:"attention_data_parallel_size"`
	Chips          int `json:"chips"`
	DevicesPerChip int `json:"jax_devices_per_chip"`
	SeqsPerReplica int `json:"sequences_per_replica"`
	// Concurrency is the sequences that run at once across the replicas
	// (inference.Layout.RunningSeqs): with clients beside max_num_seqs,
	// those of them that run, at most max_num_seqs a replica.
	Concurrency int `json:"concurrency_sequences"`
	// Clients, RunningPerReplica and QueueWait are, when the request
	// gives its clients beside max_num_seqs (sequences_per_replica the
	// cap), the clients, the sequences the busiest replica runs at once,
	// and a request's wait in the scheduler's queue when the clients are
	// more than run (inference.Layout.Concurrency, RunningEach,
	// QueueWait; ttft_seen_s includes it). Absent otherwise.
	Clients           int      `json:"clients,omitempty"`
	RunningPerReplica int      `json:"running_sequences_per_replica,omitempty"`
	QueueWait         *float64 `json:"queue_wait_s,omitempty"`
	// Under a request rate, for a layout that fits: a replica's mean
	// sequences (Little's law at its mean step; concurrency_sequences is
	// their ceiling over all replicas), that mean step with the arriving
	// prompts' chunks in it (the ITL a sequence sees on average;
	// inter_token_latency_s is the decode-only step at the cap), and the
	// probability that an arrival finds its replica's
	// sequences_per_replica all taken and waits (the Poisson tail at that
	// cap, inference.AtRate). Absent otherwise.
	MeanSeqs      *float64 `json:"mean_sequences_per_replica,omitempty"`
	MeanStep      *float64 `json:"mean_step_s,omitempty"`
	FullOnArrival *float64 `json:"full_on_arrival_fraction,omitempty"`
	// TTFTUnderLoad is, under a request rate, for a layout that fits, an
	// arriving prompt's time to its first token at the load (its mean,
	// which the TTFT SLO is checked against, and percentiles;
	// inference.Layout.LoadTTFT); ttft_s is a lone prompt's on an idle
	// replica. Absent otherwise.
	TTFTUnderLoad *Percentiles `json:"ttft_under_load_s,omitempty"`
	Fits          bool         `json:"fits"`
	// Preempts: the layout fits but its pages do not hold its sequences
	// at their full length at once, so vLLM preempts some
	// (inference.Layout.Preempts). Absent otherwise.
	Preempts      bool             `json:"preempts,omitempty"`
	MeetsSLO      bool             `json:"meets_slo"`
	Misses        []string         `json:"misses_slo"`
	ActiveExperts float64          `json:"active_experts_per_moe_layer,omitempty"`
	Memory        inference.Memory `json:"memory_per_device"`
	// TTFT, ITL and the tokens/s are null for a layout that does not
	// fit (Fits false): it cannot run at the load, so they cannot happen.
	TTFT *float64 `json:"ttft_s"`
	ITL  *float64 `json:"inter_token_latency_s"`
	// TTFTSeen and ITLSeen are what the plan ranks the layouts and checks
	// the SLOs by (inference.Request.Seen): under a request rate the mean
	// TTFT at the load and the mean step, else ttft_s and
	// inter_token_latency_s; null for a layout that does not fit.
	TTFTSeen         *float64 `json:"ttft_seen_s"`
	ITLSeen          *float64 `json:"itl_seen_s"`
	PrefillCompute   float64  `json:"prefill_compute_s"`
	PrefillAllReduce float64  `json:"prefill_all_reduce_s"`
	// PrefillWeights is the prompt's chunks' weights read from HBM,
	// PrefillRoofline their time, each chunk the longer of its MXU time
	// (prefill_compute_s) and that read: ttft_s is prefill_roofline_s +
	// prefill_all_reduce_s + prefill_steps × step_overhead_s.
	PrefillWeights  float64 `json:"prefill_weights_hbm_s"`
	PrefillRoofline float64 `json:"prefill_roofline_s"`
	PrefillSteps    int     `json:"prefill_steps"`
	DecodeMemory    float64 `json:"decode_hbm_s"`
	DecodeCompute   float64 `json:"decode_compute_s"`
	DecodeAllReduce float64 `json:"decode_all_reduce_s"`
	DecodeKV        float64 `json:"decode_kv_hbm_s"`
	DecodeAttention float64 `json:"decode_attention_mxu_s"`
	DecodeSampling  float64 `json:"decode_sampling_s"`
	// DecodeLinear is a hybrid model's linear-attention recurrent
	// states, DecodeDispatch a mixture of experts' moving of its routed
	// rows, in a decode step (0 for models without): inter_token_latency_s
	// is max(decode_hbm_s − decode_kv_hbm_s, decode_compute_s) +
	// max(decode_kv_hbm_s, decode_attention_mxu_s) +
	// decode_linear_attention_s + decode_moe_dispatch_s +
	// decode_sampling_s + decode_all_reduce_s + step_overhead_s.
	DecodeLinear        float64  `json:"decode_linear_attention_s"`
	DecodeDispatch      float64  `json:"decode_moe_dispatch_s"`
	StepOverhead        float64  `json:"step_overhead_s"`
	TokensPerSecond     *float64 `json:"output_tokens_per_s"`
	TokensPerSecondChip *float64 `json:"output_tokens_per_s_per_chip"`
}

func toLayoutJSON(p inference.Plan, l inference.Layout) LayoutJSON {
	// ifFits is v, or nil (null) when the load does not fit l's pages.
	ifFits := func(v float64) *float64 {
		if !l.Fits {
			return nil
		}
		return &v
	}
	var mean, step, full *float64
	var first *Percentiles
	if p.Request.RequestRate > 0 && l.Fits {
		mean, step, full = &l.MeanSeqs, new(l.MeanStep.Seconds()), &l.FullOnArrival
		first = new(percentiles(l.LoadTTFT))
	}
	ttft, itl := p.Request.Seen(l)
	return LayoutJSON{
		TTFTSeen: ifFits(ttft.Seconds()), ITLSeen: ifFits(itl.Seconds()),
		MeanSeqs: mean, MeanStep: step, FullOnArrival: full, TTFTUnderLoad: first,
		TP: l.TP, DP: l.DP, EP: l.EP, AttentionDP: l.AttentionDP, Chips: l.Chips, DevicesPerChip: p.Request.Slice.Chip.JAXDevicesPerChip,
		SeqsPerReplica: l.SeqsEach, Concurrency: l.RunningSeqs(), Clients: clients(l), RunningPerReplica: l.RunningEach, QueueWait: queueWait(l), Fits: l.Fits, Preempts: l.Preempts, MeetsSLO: l.MeetsSLO(), Misses: append([]string{}, l.Misses...),
		ActiveExperts: l.ActiveExperts, Memory: l.Memory,
		TTFT: ifFits(l.TTFT.Seconds()), ITL: ifFits(l.ITL.Seconds()),
		PrefillCompute: l.PrefillCompute.Seconds(), PrefillAllReduce: l.PrefillAllReduce.Seconds(),
		PrefillWeights: l.PrefillWeights.Seconds(), PrefillRoofline: l.PrefillRoofline.Seconds(), PrefillSteps: l.PrefillSteps,
		DecodeLinear: l.DecodeLinear.Seconds(), DecodeDispatch: l.DecodeDispatch.Seconds(),
		DecodeMemory: l.DecodeMemory.Seconds(), DecodeCompute: l.DecodeCompute.Seconds(), DecodeAllReduce: l.DecodeAllReduce.Seconds(),
		DecodeKV: l.DecodeKV.Seconds(), DecodeAttention: l.DecodeAttention.Seconds(), DecodeSampling: l.DecodeSampling.Seconds(), StepOverhead: l.DecodeOverhead.Seconds(),
		TokensPerSecond: ifFits(l.TokensPerSecond), TokensPerSecondChip: ifFits(l.PerChip),
	}
}

// clients is l's clients given beside max_num_seqs, 0 without.
func clients(l inference.Layout) int {
	if l.RunningEach == 0 {
		return 0
	}
	return l.Concurrency
}

// queueWait is l's wait in the scheduler's queue in seconds, nil without
// one.
func queueWait(l inference.Layout) *float64 {
	if l.QueueWait <= 0 {
		return nil
	}
	return new(l.QueueWait.Seconds())
}

// Serving is plan p as JSON with cmd, its vllm serve line (VLLMServe).
// The options its reasons and warnings name are spelt as
// inference.Plan.Phrase(nil) spells them unless p was spelt already (the
// CLI spells them as flags, the web page as its form's labels).
func Serving(p inference.Plan, cmd []string) ServingJSON {
	p = p.Phrase(nil)
	r := p.Request
	out := ServingJSON{
		Model: r.Model.Name, TPU: r.Slice.AcceleratorType(), MaxModelLen: r.MaxModelLen, Concurrency: p.Best.RunningSeqs(), Clients: clients(p.Best), RequestRate: r.RequestRate,
		PromptLen: r.PromptLen, OutputLen: r.OutputLen, Weights: string(r.Weights), KVCache: string(r.KVCache),
		Checkpoint: string(r.Checkpoint), CheckpointGiven: r.CheckpointGiven,
		Utilization: r.MemoryUtilization, Objective: string(r.Objective), TTFTSLO: r.TTFTSLO.Seconds(), ITLSLO: r.ITLSLO.Seconds(), BestEffort: p.BestEffort,
		Layout: toLayoutJSON(p, p.Best), HeldOutBand: rooflineBand(p),
		Reasons: append([]string{}, p.Reasons...), Warnings: append([]string{}, p.Warnings...),
		Command: cmd, CommandLine: ShellQuote(cmd),
	}
	for _, l := range p.Layouts {
		out.Layouts = append(out.Layouts, toLayoutJSON(p, l))
	}
	return out
}

// SimJSON is a serving simulation (inference.Simulate) in ServingJSON.
// Times in seconds.
type SimJSON struct {
	Engine          string      `json:"engine"`
	LengthMix       string      `json:"length_mix"`
	Seed            uint64      `json:"seed"`
	Replicas        int         `json:"replicas"`
	Idle            int         `json:"idle_replicas,omitempty"`
	Requests        int         `json:"requests_one_replica"`
	OutputTokens    int         `json:"output_tokens_one_replica"`
	Steps           int         `json:"steps"`
	Preemptions     int         `json:"preemptions"`
	Duration        float64     `json:"duration_s"`
	TokensPerSecond float64     `json:"output_tokens_per_s"`
	TTFT            Percentiles `json:"ttft_s"`
	ITL             Percentiles `json:"inter_token_latency_s"`
	// HeldOutBand is vLLM's simulation's throughput and mean latencies at
	// the ends of its error on validate's held-out serving rows of the
	// mix's length class (inference.ServingBand); absent where none.
	HeldOutBand *BandJSON `json:"held_out_band,omitempty"`
}

// Percentiles are a latency's, in seconds.
type Percentiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// percentiles is p in seconds.
func percentiles(p inference.Percentiles) Percentiles {
	return Percentiles{p.Mean.Seconds(), p.P50.Seconds(), p.P90.Seconds(), p.P99.Seconds()}
}

// Simulation is simulation s of lengths mix and seed as JSON.
func Simulation(s inference.SimResult, mix inference.LengthMix, seed uint64) *SimJSON {
	pc := percentiles
	return &SimJSON{Engine: s.Engine.String(), LengthMix: mix.String(), Seed: seed, Replicas: s.Replicas, Idle: s.Idle, Requests: s.Requests, OutputTokens: s.OutputTokens,
		Steps: s.Steps, Preemptions: s.Preemptions, Duration: s.Duration.Seconds(), TokensPerSecond: s.TokensPerSecond, TTFT: pc(s.TTFT), ITL: pc(s.ITL),
		HeldOutBand: simBand(s, mix)}
}
