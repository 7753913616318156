package validate

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
	"shardlab/schema"
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

// ServingSource says where a serving figure was published: a file (Path)
// or an issue or pull request (Issue) of Repo at Commit, or a web page
// (URL).
type ServingSource struct {
	Repo   string `yaml:"repo,omitempty" json:"repo,omitempty"`
	Path   string `yaml:"path,omitempty" json:"path,omitempty"`
	Issue  string `yaml:"issue,omitempty" json:"issue,omitempty"`
	Commit string `yaml:"commit,omitempty" json:"commit,omitempty"`
	URL    string `yaml:"url,omitempty" json:"url,omitempty"`
}

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
	ID     string        `yaml:"id" json:"id"`
	Source ServingSource `yaml:"source" json:"source"`
	Date   string        `yaml:"date" json:"date"`
	Read   string        `yaml:"read" json:"read"`
	Set    string        `yaml:"set" json:"set"`
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
	DPAttention bool             `yaml:"enable_dp_attention,omitempty" json:"enable_dp_attention,omitempty"`
	Workload    Workload         `yaml:"workload" json:"workload"`
	Published   ServingPublished `yaml:"published" json:"published"`
	Quote       string           `yaml:"quote" json:"quote"`
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
	t := table{name: "serving", row: "row", rowError: func(id string, err error) error { return &ServingRowError{ID: id, Err: err} }}
	return parseTable(data, t, func(r *ServingRow) string { return r.ID }, (*ServingRow).check)
}

// ServingRowError is a row of a serving table that is not valid: its id
// and what is wrong. It wraps ErrInvalid and the cause.
type ServingRowError struct {
	ID  string
	Err error
}

func (e *ServingRowError) Error() string {
	return fmt.Sprintf("validate: serving row %s: %v", e.ID, e.Err)
}
func (e *ServingRowError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

func (s ServingSource) check() error {
	switch {
	case s.Repo == "" && s.URL == "":
		return bad("source", "no repo or url", "a repo (owner/name) or a url")
	case s.Repo != "" && (strings.Count(s.Repo, "/") != 1 || strings.ContainsAny(s.Repo, " \t\n")):
		return bad("source.repo", strconv.Quote(s.Repo), "owner/name")
	case s.Repo != "" && strings.TrimSpace(s.Path) == "" && strings.TrimSpace(s.Issue) == "":
		return bad("source", "no path or issue", "a path or an issue of the repo")
	case s.Commit != "" && !hexCommit.MatchString(s.Commit):
		return bad("source.commit", strconv.Quote(s.Commit), "7 to 40 lower-case hex digits")
	case s.URL != "" && !strings.HasPrefix(s.URL, "https://"):
		return bad("source.url", strconv.Quote(s.URL), "an https:// address")
	}
	return nil
}

// maxDevices bounds a row's parallelism before the slice's devices are
// known: more than any TPU slice has.
const maxDevices = 1 << 20

// servingDtypes are the formats a row may state.
var servingDtypes = []string{"bf16", "int8", "fp8"}

// check validates a row once it is decoded; for a modelled row, that the
// serving model takes its configuration.
func (r *ServingRow) check() error {
	if err := r.Source.check(); err != nil {
		return err
	}
	if _, err := time.Parse("2006-01-02", r.Date); err != nil {
		if _, err := time.Parse("2006-01", r.Date); err != nil {
			return bad("date", strconv.Quote(r.Date), "YYYY-MM-DD or YYYY-MM")
		}
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
	case r.MaxNumSeqs > 0 && w.Concurrency > r.MaxNumSeqs*r.DP:
		return bad("workload.concurrency", w.Concurrency, fmt.Sprintf("at most max_num_seqs x data_parallel = %d", r.MaxNumSeqs*r.DP))
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
// formats are bf16 and fp8. The row's max_num_seqs is a cap at or above
// its concurrency and is not passed: the concurrency is what ran.
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
	return inference.NewRequest(inference.Request{Model: spec, Slice: s, MaxModelLen: r.MaxModelLen,
		Concurrency: r.Workload.Concurrency, PromptLen: r.Workload.InputLen, OutputLen: r.Workload.OutputLen,
		Weights: inference.Dtype(r.Weights), KVCache: kv, MemoryUtilization: r.MemoryUtil,
		MaxNumBatchedTokens: r.MaxBatched, TP: r.TP, DPAttention: r.DPAttention})
}

// ServingResult is one row of the serving table run through shardlab's
// serving model at its configuration.
type ServingResult struct {
	Row ServingRow
	// Modelled is false for a not_modelled row; the rest is then zero.
	Modelled bool
	// Layout is the row's layout (its memory says whether the
	// sequences fit); Sim the simulation of its run, the prediction.
	Layout inference.Layout
	Sim    inference.SimResult
	// Error is (predicted − published) / published output tokens/s;
	// TTFTError and ITLError the same for the means where published, else
	// NaN.
	Error, TTFTError, ITLError float64
}

// Refused says the serving model does not fit the row's concurrency in
// the KV cache at its max_model_len, though the engine ran it.
func (r ServingResult) Refused() bool { return r.Modelled && !r.Layout.Fits }

// ServingReport is shardlab's serving model against the serving table.
type ServingReport struct {
	Results []ServingResult
}

// EvaluateServing runs the serving model on every row's configuration:
// inference.Estimate at the row's tensor-parallel size and replicas for
// the memory, then inference.Simulate of the row's run (SimOptions) for
// the prediction.
func EvaluateServing(rows []ServingRow) (ServingReport, error) {
	var rep ServingReport
	for _, row := range rows {
		if row.NotModelled != "" || row.Model == "" {
			rep.Results = append(rep.Results, ServingResult{Row: row, Error: math.NaN(), TTFTError: math.NaN(), ITLError: math.NaN()})
			continue
		}
		req, err := row.Request()
		if err != nil {
			return rep, &ServingRowError{ID: row.ID, Err: err}
		}
		l := inference.Estimate(req, row.TP, row.DP)
		sim, err := inference.Simulate(req, l, row.SimOptions(), rand.New(rand.NewPCG(ServingSeed, 0)))
		if err != nil {
			return rep, &ServingRowError{ID: row.ID, Err: err}
		}
		rep.Results = append(rep.Results, servingResult(row, l, sim))
	}
	return rep, nil
}

// ServingSeed seeds every row's simulation (its lengths are fixed, so
// only a request rate would draw from it).
const ServingSeed = 1

// SimOptions is the simulation of the row's run: its engine's scheduler,
// the row's lengths (for random prompts with a range ratio r, each
// request's prompt and output drawn uniformly from [⌊L·r⌋, L] as
// InferenceX's client draws them, SemiAnalysisAI/InferenceX
// utils/bench_serving/benchmark_serving.py sample_uniform @d39a07fd;
// else the published lengths, or the dataset's means for ShareGPT, for
// every request), its concurrency as a closed loop of clients and its
// prompts. JetStream's batch slots are the row's concurrency; vLLM's
// max_num_seqs the row's, or its concurrency when not given.
func (r ServingRow) SimOptions() inference.SimOptions {
	w := r.Workload
	mix := inference.FixedMix(w.InputLen, w.OutputLen)
	if w.RangeRatio > 0 {
		lo := func(l int) int { return max(int(float64(l)*w.RangeRatio), 1) }
		if m, err := inference.UniformMix(lo(w.InputLen), w.InputLen, lo(w.OutputLen), w.OutputLen); err == nil {
			mix = m
		}
	}
	o := inference.SimOptions{Engine: inference.VLLM, MaxNumSeqs: r.MaxNumSeqs,
		Load: inference.Load{Mix: mix, Concurrency: w.Concurrency, Requests: w.NumPrompts}}
	if r.Engine == EngineJetStreamPyTorch {
		o.Engine, o.MaxNumSeqs = inference.JetStream, w.Concurrency
	}
	o.Engine = r.ServingEngine()
	if o.MaxNumSeqs == 0 {
		o.MaxNumSeqs = w.Concurrency
	}
	return o
}

// BuiltInServingReport evaluates the built-in serving table.
func BuiltInServingReport() (ServingReport, error) {
	rows, err := ServingRows()
	if err != nil {
		return ServingReport{}, err
	}
	return EvaluateServing(rows)
}

func servingResult(row ServingRow, l inference.Layout, sim inference.SimResult) ServingResult {
	rel := func(got, want float64) float64 {
		if want <= 0 {
			return math.NaN()
		}
		return (got - want) / want
	}
	p := row.Published
	return ServingResult{Row: row, Modelled: true, Layout: l, Sim: sim, Error: rel(sim.TokensPerSecond, p.OutputTokensPerS),
		TTFTError: rel(ms(sim.TTFT.Mean), p.MeanTTFTms), ITLError: rel(ms(sim.ITL.Mean), p.MeanITLms)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ServingStats summarises the throughput error of a set of rows, over the
// modelled rows the serving model fits (a refused row's throughput is
// that of a layout that does not hold its sequences).
type ServingStats struct {
	Set    string `json:"set"`
	Engine string `json:"engine,omitempty"`
	// Rows is "" for all the set's rows, RowsCalibration or RowsHeldOut.
	Rows        string  `json:"row_kind,omitempty"`
	N           int     `json:"rows"`
	NotModelled int     `json:"not_modelled"`
	Refused     int     `json:"refused"`
	Compared    int     `json:"compared"`
	Median      float64 `json:"median_abs_error"`
	Min         float64 `json:"min_error"`
	Max         float64 `json:"max_error"`
}

// The kinds of rows a summary covers besides all of them.
const (
	RowsCalibration = "calibration"
	RowsHeldOut     = "held-out"
)

// Summary is the statistics of one set (SetA, SetB), of one engine's
// rows when engine is not "".
func (rep ServingReport) Summary(set, engine string) ServingStats {
	return rep.SummaryOf(set, engine, "")
}

// SummaryOf is Summary over the rows of one kind: RowsCalibration,
// RowsHeldOut, or "" for all.
func (rep ServingReport) SummaryOf(set, engine, kind string) ServingStats {
	st := ServingStats{Set: set, Engine: engine, Rows: kind}
	var abs []float64
	for _, r := range rep.Results {
		if r.Row.Set != set || engine != "" && r.Row.Engine != engine ||
			kind == RowsCalibration && !r.Row.Calibration || kind == RowsHeldOut && r.Row.Calibration {
			continue
		}
		st.N++
		switch {
		case !r.Modelled:
			st.NotModelled++
			continue
		case r.Refused():
			st.Refused++
			continue
		}
		if len(abs) == 0 {
			st.Min, st.Max = r.Error, r.Error
		}
		st.Min, st.Max = min(st.Min, r.Error), max(st.Max, r.Error)
		abs = append(abs, math.Abs(r.Error))
	}
	st.Compared = len(abs)
	if len(abs) > 0 {
		st.Median = median(abs)
	}
	return st
}

// sets lists the report's sets, A first; engines its engines in the
// order they first appear.
func (rep ServingReport) sets() []string {
	return setsOf(rep.Results, func(r ServingResult) string { return r.Row.Set })
}

func (rep ServingReport) engines() []string {
	var out []string
	for _, r := range rep.Results {
		if !oneOf(r.Row.Engine, out) {
			out = append(out, r.Row.Engine)
		}
	}
	return out
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// WriteText writes the serving report for people: a row per published
// figure with the prediction and its error, the latencies where
// published, the rows not modelled, and each set's summary.
func (rep ServingReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, "Serving: published TPU serving figures (validate/serving.yaml) against shardlab's serving model at each row's configuration.")
	fmt.Fprintln(&b, "predicted = inference.Simulate of the row's run: its engine's scheduler (vLLM: continuous batching, chunked prefill in the token")
	fmt.Fprintln(&b, "budget, paged KV cache, preemption, tpu-inference's padding; JetStream: one prompt a prefill into a free slot, generate steps over")
	fmt.Fprintln(&b, "all slots attending the whole cache) at the row's TP, concurrency (a closed loop of clients), prompts and mean lengths; each step")
	fmt.Fprintln(&b, "costs its matmul roofline, then the attention's KV read and decode queries' MXU passes, the TP all-reduces and the engine's")
	fmt.Fprintf(&b, "fixed step time (fitted on the calibration rows only: vllm %v, jetstream %v). An int8 KV cache is costed as one byte.\n",
		inference.StepOverhead(inference.VLLM), inference.StepOverhead(inference.JetStream))
	fmt.Fprintln(&b, "error = (predicted - published) / published output tokens/s; a row is refused when its sequences do not fit the KV cache.")
	fmt.Fprintln(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tset\tfit\tengine\tmodel\ttpu\tTPxDP\tw/kv\tconc\tin/out\tpublished\tpredicted\terror\tfits")
	for _, r := range rep.Results {
		if !r.Modelled {
			continue
		}
		c, l := r.Row, r.Layout
		fits := "yes"
		if r.Refused() {
			fits = fmt.Sprintf("REFUSED: %d fit", l.DP*l.Memory.MaxSeqs)
		}
		role := "held-out"
		if c.Calibration {
			role = "calib"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%dx%d\t%s/%s\t%d\t%d/%d\t%.0f\t%.0f\t%s\t%s\n", c.ID, c.Set, role, c.Engine, c.Model, c.AcceleratorType,
			c.TP, c.DP, c.Weights, c.KVCache, c.Workload.Concurrency, c.Workload.InputLen, c.Workload.OutputLen,
			c.Published.OutputTokensPerS, r.Sim.TokensPerSecond, pct(r.Error), fits)
	}
	tw.Flush()
	rep.writeLatency(&b)
	n := 0
	for _, r := range rep.Results {
		if r.Modelled {
			continue
		}
		if n == 0 {
			fmt.Fprintln(&b, "\nnot modelled:")
		}
		n++
		fmt.Fprintf(&b, "  %s (%s, %s, %.0f tok/s): %s\n", r.Row.ID, r.Row.PublishedModel, r.Row.AcceleratorType, r.Row.Published.OutputTokensPerS, r.Row.NotModelled)
	}
	for _, s := range rep.sets() {
		st := rep.Summary(s, "")
		when := "collected 2026-12-04, before any row was compared"
		if s == SetB {
			when = "added later, after the serving model and its fit: never fitted on"
		}
		fmt.Fprintf(&b, "\nSet %s (%s): %d rows, %d not modelled, %d refused (the KV cache holds fewer sequences than ran)\n", s, when, st.N, st.NotModelled, st.Refused)
		if st.Compared == 0 {
			fmt.Fprintln(&b, "  no row compared")
			continue
		}
		fmt.Fprintf(&b, "  throughput over %d rows compared: median |error| %.1f%%, error from %s to %s\n", st.Compared, 100*st.Median, pct(st.Min), pct(st.Max))
		for _, k := range []string{RowsCalibration, RowsHeldOut} {
			if ks := rep.SummaryOf(s, "", k); ks.Compared > 0 {
				fmt.Fprintf(&b, "  %s rows: %d compared, median |error| %.1f%%, error from %s to %s\n", k, ks.Compared, 100*ks.Median, pct(ks.Min), pct(ks.Max))
			}
		}
		for _, e := range rep.engines() {
			es := rep.Summary(s, e)
			if es.N == 0 {
				continue
			}
			fmt.Fprintf(&b, "  %s: %d rows compared, median |error| %.1f%%, %d refused, %d not modelled\n", e, es.Compared, 100*es.Median, es.Refused, es.NotModelled)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLatency writes the rows whose sources publish mean TTFT or ITL
// beside the serving model's.
func (rep ServingReport) writeLatency(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	n := 0
	for _, r := range rep.Results {
		p := r.Row.Published
		if !r.Modelled || p.MeanTTFTms == 0 && p.MeanITLms == 0 {
			continue
		}
		if n == 0 {
			fmt.Fprintln(b, "\nlatency where published (means; the simulation's TTFT includes its queueing):")
			fmt.Fprintln(tw, "row\tTTFT ms\tpredicted\terror\tITL ms\tpredicted\terror")
		}
		n++
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%s\n", r.Row.ID, p.MeanTTFTms, ms(r.Sim.TTFT.Mean), pct(r.TTFTError), p.MeanITLms, ms(r.Sim.ITL.Mean), pct(r.ITLError))
	}
	tw.Flush()
}

// ServingJSON is the machine-readable serving report (shardlab validate
// --serving --json).
type ServingJSON struct {
	Rows    []ServingRowJSON `json:"rows"`
	Summary []ServingStats   `json:"summary"`
}

// ServingRowJSON is one row with its prediction; the prediction's fields
// are absent for a row not modelled.
type ServingRowJSON struct {
	ServingRow
	Modelled          bool     `json:"modelled"`
	PredictedTokensPS *float64 `json:"predicted_output_tokens_per_s,omitempty"`
	PredictedTTFTms   *float64 `json:"predicted_ttft_ms,omitempty"`
	PredictedITLms    *float64 `json:"predicted_itl_ms,omitempty"`
	Error             *float64 `json:"relative_error,omitempty"`
	TTFTError         *float64 `json:"ttft_relative_error,omitempty"`
	ITLError          *float64 `json:"itl_relative_error,omitempty"`
	Fits              *bool    `json:"fits,omitempty"`
	MaxSeqs           *int     `json:"max_seqs_at_max_model_len,omitempty"`
}

// JSON returns the serving report's machine-readable form: the summary
// of each set, then of each set's engines.
func (rep ServingReport) JSON() ServingJSON {
	out := ServingJSON{Rows: []ServingRowJSON{}, Summary: []ServingStats{}}
	for _, r := range rep.Results {
		out.Rows = append(out.Rows, r.JSON())
	}
	for _, s := range rep.sets() {
		out.Summary = append(out.Summary, rep.Summary(s, ""))
		for _, k := range []string{RowsCalibration, RowsHeldOut} {
			if st := rep.SummaryOf(s, "", k); st.N > 0 {
				out.Summary = append(out.Summary, st)
			}
		}
		for _, e := range rep.engines() {
			if st := rep.Summary(s, e); st.N > 0 {
				out.Summary = append(out.Summary, st)
			}
		}
	}
	return out
}

// JSON returns one row's machine-readable form.
func (r ServingResult) JSON() ServingRowJSON {
	row := ServingRowJSON{ServingRow: r.Row, Modelled: r.Modelled}
	if !r.Modelled {
		return row
	}
	finite := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	l := r.Layout
	tps, ttft, itl := r.Sim.TokensPerSecond, ms(r.Sim.TTFT.Mean), ms(r.Sim.ITL.Mean)
	fits, seqs := l.Fits, l.DP*l.Memory.MaxSeqs
	row.PredictedTokensPS, row.PredictedTTFTms, row.PredictedITLms = &tps, &ttft, &itl
	row.Error, row.TTFTError, row.ITLError = finite(r.Error), finite(r.TTFTError), finite(r.ITLError)
	row.Fits, row.MaxSeqs = &fits, &seqs
	return row
}

// WriteJSON writes the serving report as indented JSON.
func (rep ServingReport) WriteJSON(w io.Writer) error {
	return schema.Write(w, rep.JSON())
}
