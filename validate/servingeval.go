package validate

import (
	"math"
	"math/rand/v2"
	"time"

	"shardlab/inference"
)

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
	// RooflineError is the same for the layout's roofline output
	// tokens/s at the row's concurrency (Layout.TokensPerSecond), the
	// plan's headline figure.
	RooflineError float64
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
			rep.Results = append(rep.Results, ServingResult{Row: row, Error: math.NaN(), TTFTError: math.NaN(), ITLError: math.NaN(), RooflineError: math.NaN()})
			continue
		}
		req, err := row.Request()
		if err != nil {
			return rep, servingTable.rowError(row.ID, err)
		}
		l := inference.Estimate(req, row.TP, row.DP)
		sim, err := inference.Simulate(req, l, row.SimOptions(), rand.New(rand.NewPCG(ServingSeed, 0)))
		if err != nil {
			return rep, servingTable.rowError(row.ID, err)
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
// prompts. JetStream's batch slots are the row's concurrency (its
// batch_size), shared by its data-parallel devices: with shard_on_batch
// jetstream-pytorch allocates one cache of batch_size slots sharded on
// its batch axis over the devices (jetstream_pt/environment.py
// kv_cache_shard_axis "batch", engine.py cache_shape (batch_size, ...)
// @f3cf2b7, 2024-05-14, the Gemma 2B rows' day), so each device, the
// replica Simulate steps, runs batch_size / DP of them. vLLM's
// max_num_seqs the row's as its server was given it, each scheduler's
// (inference.SimOptions), or its concurrency when not given.
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
		dp := max(r.DP, 1)
		o.Engine, o.MaxNumSeqs = inference.JetStream, (w.Concurrency+dp-1)/dp
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
	p := row.Published
	return ServingResult{Row: row, Modelled: true, Layout: l, Sim: sim, Error: relative(sim.TokensPerSecond, p.OutputTokensPerS),
		RooflineError: relative(l.TokensPerSecond, p.OutputTokensPerS),
		TTFTError:     relative(ms(sim.TTFT.Mean), p.MeanTTFTms), ITLError: relative(ms(sim.ITL.Mean), p.MeanITLms)}
}

// relative is (got − want) / want, NaN where nothing was published.
func relative(got, want float64) float64 {
	if want <= 0 {
		return math.NaN()
	}
	return (got - want) / want
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
