package validate

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

//go:embed serving.yaml
var servingYAML []byte

// The serving engines of the table.
const (
	// EngineJetStreamPyTorch is JetStream's PyTorch engine
	// (AI-Hypercomputer/jetstream-pytorch).
	EngineJetStreamPyTorch = "jetstream-pytorch"
	// EngineVLLM is vLLM with its TPU backend, tpu-inference.
	EngineVLLM = "vllm"
)

// The request sets a serving row's workload draws from.
const (
	DatasetShareGPT = "sharegpt"
	DatasetRandom   = "random"
)

// Workload is the requests a serving figure was measured on.
type Workload struct {
	Dataset    string `yaml:"dataset" json:"dataset"`
	NumPrompts int    `yaml:"num_prompts" json:"num_prompts"`
	// Concurrency is the sequences in the server at once: the engine's
	// batch slots or the client's --max-concurrency.
	Concurrency int `yaml:"concurrency" json:"concurrency"`
	// InputLen and OutputLen are the lengths shardlab models: the
	// published ones for random prompts, the dataset's means for ShareGPT
	// (LengthsFrom says where they come from).
	InputLen  int `yaml:"input_len" json:"input_len"`
	OutputLen int `yaml:"output_len" json:"output_len"`
	// RangeRatio r, for random prompts, is the client's
	// --random-range-ratio: InferenceX's client (every row that gives
	// one) draws each prompt and output length uniformly from
	// [⌊L·r⌋, L] (ServingRow.SimOptions); 0 is L exactly.
	RangeRatio  float64 `yaml:"range_ratio,omitempty" json:"range_ratio,omitempty"`
	LengthsFrom string  `yaml:"lengths_from,omitempty" json:"lengths_from,omitempty"`
}

// ServingPublished is what a source published for a row, as published;
// 0 is not given.
type ServingPublished struct {
	// Metric is the column or line the throughput was read from.
	Metric           string  `yaml:"metric" json:"metric"`
	OutputTokensPerS float64 `yaml:"output_tokens_per_s" json:"output_tokens_per_s"`
	MeanTTFTms       float64 `yaml:"mean_ttft_ms,omitempty" json:"mean_ttft_ms,omitempty"`
	MeanITLms        float64 `yaml:"mean_itl_ms,omitempty" json:"mean_itl_ms,omitempty"`
}

// ServingRow is one published serving figure and the configuration it
// was measured at.
type ServingRow struct {
	Cited `yaml:",inline"`
	Date  string `yaml:"date" json:"date"`
	Read  string `yaml:"read" json:"read"`
	Set   string `yaml:"set" json:"set"`
	// Calibration marks a row the engine's fixed step time is fitted on
	// (FitStepOverhead); the others are held out. Marked by a rule set
	// before fitting (serving.yaml's header).
	Calibration bool   `yaml:"calibration,omitempty" json:"calibration,omitempty"`
	Engine      string `yaml:"engine" json:"engine"`
	// Model is shardlab's catalog name, or "" when the catalog has no
	// model of that architecture (NotModelled then says so).
	Model           string  `yaml:"model" json:"model"`
	PublishedModel  string  `yaml:"published_model" json:"published_model"`
	AcceleratorType string  `yaml:"accelerator_type" json:"accelerator_type"`
	TP              int     `yaml:"tensor_parallel" json:"tensor_parallel"`
	DP              int     `yaml:"data_parallel" json:"data_parallel"`
	Weights         string  `yaml:"weights" json:"weights"`
	KVCache         string  `yaml:"kv_cache" json:"kv_cache"`
	MaxModelLen     int     `yaml:"max_model_len" json:"max_model_len"`
	MaxNumSeqs      int     `yaml:"max_num_seqs,omitempty" json:"max_num_seqs,omitempty"`
	MaxBatched      int     `yaml:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	MemoryUtil      float64 `yaml:"gpu_memory_utilization" json:"gpu_memory_utilization"`
	// DPAttention is tpu-inference's enable_dp_attention (its
	// --additional-config), as the row's server was given it.
	DPAttention bool `yaml:"enable_dp_attention,omitempty" json:"enable_dp_attention,omitempty"`
	// MoEAllRows says the row's engine is a tpu-inference from before its
	// PR #2294 (2026-04-16), whose expert parallelism dispatches every
	// routed row on every device (inference.Request.MoEAllRows); the
	// notes name the image and its tpu-inference commit.
	MoEAllRows bool             `yaml:"moe_all_rows,omitempty" json:"moe_all_rows,omitempty"`
	Workload   Workload         `yaml:"workload" json:"workload"`
	Published  ServingPublished `yaml:"published" json:"published"`
	Quote      string           `yaml:"quote" json:"quote"`
	// NotModelled says why shardlab cannot run the row's configuration.
	NotModelled string `yaml:"not_modelled,omitempty" json:"not_modelled,omitempty"`
	Notes       string `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// ServingRows is the built-in serving table.
func ServingRows() ([]ServingRow, error) { return ParseServing(servingYAML) }

// ParseServing reads a serving table (YAML): unknown fields, fractional
// numbers where whole ones belong, NaN and infinities are errors, each
// naming its row and field, and so is a modelled row whose configuration
// shardlab's serving model refuses.
func ParseServing(data []byte) ([]ServingRow, error) {
	return parseTable[ServingRow](data, servingTable)
}

// maxDevices bounds a row's parallelism before the slice's devices are
// known: more than any TPU slice has.
const maxDevices = 1 << 20

// servingDtypes are the formats a row may state.
var servingDtypes = []string{"bf16", "int8", "fp8"}

// check validates a row once it is decoded (parseTable has checked its
// source); for a modelled row, that the serving model takes its
// configuration.
func (r *ServingRow) check() error {
	if err := r.checkProvenance(); err != nil {
		return err
	}
	if err := r.checkSettings(); err != nil {
		return err
	}
	if err := r.checkWorkload(); err != nil {
		return err
	}
	s, err := hw.ParseAcceleratorType(r.AcceleratorType)
	if err != nil {
		return fmt.Errorf("accelerator_type: %w", err)
	}
	if devices := s.Chips() * s.Chip.JAXDevicesPerChip; r.TP*r.DP > devices {
		return bad("data_parallel", r.DP, fmt.Sprintf("at most %d replicas of tensor_parallel %d on the %d JAX devices of %s", devices/r.TP, r.TP, devices, r.AcceleratorType))
	}
	if r.Model == "" {
		if strings.TrimSpace(r.NotModelled) == "" {
			return bad("model", `""`, "a catalog model, or not_modelled saying why there is none")
		}
		return nil
	}
	if _, ok := model.Lookup(r.Model); !ok {
		return bad("model", strconv.Quote(r.Model), "a model of shardlab's catalog (shardlab model list), or empty with not_modelled")
	}
	if r.NotModelled != "" {
		return nil
	}
	_, err = r.Request()
	return err
}

// checkProvenance validates when the row was published and read, and the
// source's words it quotes.
func (r *ServingRow) checkProvenance() error {
	if err := checkDate(r.Date); err != nil {
		return err
	}
	if _, err := time.Parse("2006-01-02", r.Read); err != nil {
		return bad("read", strconv.Quote(r.Read), "YYYY-MM-DD")
	}
	text := []struct{ field, v string }{{"published_model", r.PublishedModel}, {"quote", r.Quote}, {"published.metric", r.Published.Metric}}
	for _, t := range text {
		if strings.TrimSpace(t.v) == "" {
			return bad(t.field, `""`, "the source's text")
		}
	}
	return nil
}

// checkSettings validates the row's set, engine and server settings: its
// dtypes, parallelism, lengths and memory.
func (r *ServingRow) checkSettings() error {
	switch {
	case r.Set != SetA && r.Set != SetB:
		return bad("set", strconv.Quote(r.Set), "A or B")
	case r.Engine != EngineJetStreamPyTorch && r.Engine != EngineVLLM:
		return bad("engine", strconv.Quote(r.Engine), EngineJetStreamPyTorch+" or "+EngineVLLM)
	case !oneOf(r.Weights, servingDtypes):
		return bad("weights", strconv.Quote(r.Weights), strings.Join(servingDtypes, ", "))
	case !oneOf(r.KVCache, servingDtypes):
		return bad("kv_cache", strconv.Quote(r.KVCache), strings.Join(servingDtypes, ", "))
	case r.TP < 1 || r.TP > maxDevices:
		return bad("tensor_parallel", r.TP, fmt.Sprintf("1 to %d", maxDevices))
	case r.DP < 1 || r.DP > maxDevices:
		return bad("data_parallel", r.DP, fmt.Sprintf("1 to %d", maxDevices))
	case r.MaxModelLen < 2 || r.MaxModelLen > inference.MaxTokens:
		return bad("max_model_len", r.MaxModelLen, fmt.Sprintf("2 to %d", inference.MaxTokens))
	case r.MaxNumSeqs < 0 || r.MaxNumSeqs > inference.MaxConcurrency:
		return bad("max_num_seqs", r.MaxNumSeqs, fmt.Sprintf("0 (not set) to %d", inference.MaxConcurrency))
	case r.MaxBatched < 1 || r.MaxBatched > inference.MaxTokens:
		return bad("max_num_batched_tokens", r.MaxBatched, fmt.Sprintf("1 to %d", inference.MaxTokens))
	case !(r.MemoryUtil > 0 && r.MemoryUtil <= 1):
		return bad("gpu_memory_utilization", r.MemoryUtil, "a number in (0, 1]")
	}
	return nil
}

// schedulers is the vLLM schedulers of one replica of the row, each
// running max_num_seqs, as inference.Request.Schedulers counts them; one
// for JetStream.
func (r *ServingRow) schedulers() int {
	spec, _ := model.Lookup(r.Model)
	if r.Engine != EngineVLLM {
		return 1
	}
	return inference.Request{Model: spec, DPAttention: r.DPAttention}.Schedulers(r.TP)
}

// checkWorkload validates a row's workload and published figures.
func (r *ServingRow) checkWorkload() error {
	w, p := r.Workload, r.Published
	switch {
	case w.Dataset != DatasetShareGPT && w.Dataset != DatasetRandom:
		return bad("workload.dataset", strconv.Quote(w.Dataset), DatasetShareGPT+" or "+DatasetRandom)
	case w.Dataset == DatasetShareGPT && strings.TrimSpace(w.LengthsFrom) == "":
		return bad("workload.lengths_from", `""`, "where a ShareGPT row's mean lengths come from")
	case w.NumPrompts < 1:
		return bad("workload.num_prompts", w.NumPrompts, "1 or more")
	case w.Concurrency < 1 || w.Concurrency > inference.MaxConcurrency:
		return bad("workload.concurrency", w.Concurrency, fmt.Sprintf("1 to %d", inference.MaxConcurrency))
	case r.MaxNumSeqs > 0 && w.Concurrency > r.MaxNumSeqs*r.DP*r.schedulers():
		return bad("workload.concurrency", w.Concurrency, fmt.Sprintf("at most max_num_seqs x data_parallel x attention DP ranks = %d", r.MaxNumSeqs*r.DP*r.schedulers()))
	case w.InputLen < 1 || w.InputLen >= r.MaxModelLen:
		return bad("workload.input_len", w.InputLen, fmt.Sprintf("1 to %d (max_model_len less one)", r.MaxModelLen-1))
	case w.OutputLen < 1 || w.InputLen+w.OutputLen > r.MaxModelLen:
		return bad("workload.output_len", w.OutputLen, fmt.Sprintf("1 to %d (max_model_len less input_len)", r.MaxModelLen-w.InputLen))
	case !(w.RangeRatio >= 0 && w.RangeRatio <= 1):
		return bad("workload.range_ratio", w.RangeRatio, "0 to 1")
	case !(p.OutputTokensPerS > 0):
		return bad("published.output_tokens_per_s", p.OutputTokensPerS, "a positive number")
	case !(p.MeanTTFTms >= 0):
		return bad("published.mean_ttft_ms", p.MeanTTFTms, "0 (not given) or a positive number")
	case !(p.MeanITLms >= 0):
		return bad("published.mean_itl_ms", p.MeanITLms, "0 (not given) or a positive number")
	}
	return nil
}

func oneOf(s string, list []string) bool {
	for _, v := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Request is the serving question the row's configuration asks of
// package inference: its model, TPU, lengths, dtypes, server settings,
// tensor-parallel size and concurrency (all replicas'). An int8 KV cache
// is asked as fp8: one byte an element either way, and inference's KV
// formats are bf16 and fp8. A vLLM row's max_num_seqs is passed as its
// server was given it (each scheduler's, inference.Request.MaxNumSeqs),
// with its concurrency as the clients, as shardlab inference takes the
// published command's --max-num-seqs and --concurrency.
func (r ServingRow) Request() (inference.Request, error) {
	spec, ok := model.Lookup(r.Model)
	if !ok {
		return inference.Request{}, bad("model", strconv.Quote(r.Model), "a model of shardlab's catalog")
	}
	s, err := hw.ParseAcceleratorType(r.AcceleratorType)
	if err != nil {
		return inference.Request{}, fmt.Errorf("accelerator_type: %w", err)
	}
	kv := inference.Dtype(r.KVCache)
	if kv == inference.Int8 {
		kv = inference.FP8
	}
	req := inference.Request{Model: spec, Slice: s, MaxModelLen: r.MaxModelLen,
		Concurrency: r.Workload.Concurrency, PromptLen: r.Workload.InputLen, OutputLen: r.Workload.OutputLen,
		Weights: inference.Dtype(r.Weights), KVCache: kv, MemoryUtilization: r.MemoryUtil,
		MaxNumBatchedTokens: r.MaxBatched, TP: r.TP, DPAttention: r.DPAttention, MoEAllRows: r.MoEAllRows}
	if r.Engine == EngineVLLM && r.MaxNumSeqs > 0 {
		req.MaxNumSeqs, req.Clients = r.MaxNumSeqs, r.Workload.Concurrency
	}
	return inference.NewRequest(req)
}
