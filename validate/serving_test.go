package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

// TestServingRowsBuild: every row of the built-in table parses, carries
// its source, quote and dates, and every modelled row's configuration is
// one the serving model takes; the rows not modelled say why.
func TestServingRowsBuild(t *testing.T) {
	rows, err := ServingRows()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("ServingRows() = no rows")
	}
	modelled := 0
	for _, r := range rows {
		if r.Source.Repo == "" && r.Source.URL == "" || r.Quote == "" || r.Date == "" || r.Read == "" {
			t.Errorf("%s: source %+v, quote %q, date %q, read %q: want all four on every row", r.ID, r.Source, r.Quote, r.Date, r.Read)
		}
		if r.NotModelled != "" {
			continue
		}
		modelled++
		if _, err := r.Request(); err != nil {
			t.Errorf("%s: Request() error %v", r.ID, err)
		}
	}
	if modelled == 0 {
		t.Error("the serving table has no modelled row")
	}
}

// servingGood is one self-contained row of the built-in table.
func servingGood(t *testing.T) string {
	t.Helper()
	i := bytes.Index(servingYAML, []byte("- id: recipes-v6e8-llama3.3-70b-c64"))
	j := bytes.Index(servingYAML, []byte("- id: recipes-v6e8-llama3.3-70b-c128"))
	if i < 0 || j < i {
		t.Fatal("serving.yaml has no recipes-v6e8-llama3.3-70b-c64 row followed by -c128")
	}
	return string(servingYAML[i:j])
}

// TestParseServingErrors: a broken field is refused, and the error names
// the row and the field.
func TestParseServingErrors(t *testing.T) {
	good := servingGood(t)
	if _, err := ParseServing([]byte(good)); err != nil {
		t.Fatalf("ParseServing(the c64 row alone) error %v", err)
	}
	sub := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the c64 row has no %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct {
		name, data, want string
	}{
		{"unknown key", sub("  set: A\n", "  set: A\n  colour: red\n"), "colour"},
		{"fractional tp", sub("tensor_parallel: 8", "tensor_parallel: 8.5"), "tensor_parallel"},
		{"float concurrency", sub("concurrency: 64", "concurrency: 6.4e1"), "workload.concurrency"},
		{"NaN throughput", sub("output_tokens_per_s: 2494.80", "output_tokens_per_s: .nan"), "published.output_tokens_per_s"},
		{"Inf utilization", sub("gpu_memory_utilization: 0.98", "gpu_memory_utilization: .inf"), "gpu_memory_utilization"},
		{"zero throughput", sub("output_tokens_per_s: 2494.80", "output_tokens_per_s: 0"), "published.output_tokens_per_s"},
		{"negative itl", sub("mean_itl_ms: 25.35", "mean_itl_ms: -1"), "published.mean_itl_ms"},
		{"utilization over 1", sub("gpu_memory_utilization: 0.98", "gpu_memory_utilization: 1.5"), "gpu_memory_utilization"},
		{"set", sub("set: A", "set: C"), "set"},
		{"engine", sub("engine: vllm", "engine: sglang"), "engine"},
		{"date", sub("date: 2026-04", "date: April 2026"), "date"},
		{"read", sub("read: 2026-12-04", "read: 2026-12"), "read"},
		{"repo", sub("repo: AI-Hypercomputer/tpu-recipes", "repo: tpu-recipes"), "source.repo"},
		{"commit", sub("commit: c8cfe2f689081d36701a101cd73a70965d80926b", "commit: main"), "source.commit"},
		{"no path", sub("path: inference/trillium/vLLM/Llama3.x/README.md, ", ""), "source"},
		{"weights", sub("weights: bf16", "weights: fp4"), "weights"},
		{"kv cache", sub("kv_cache: bf16", "kv_cache: auto"), "kv_cache"},
		{"unknown model", sub("model: llama3-70b", "model: llama9-1t"), "model"},
		{"no model, no reason", sub("model: llama3-70b", "model: ''"), "not_modelled"},
		{"tpu", sub("accelerator_type: v6e-8", "accelerator_type: v9-8"), "accelerator_type"},
		{"too many devices", sub("data_parallel: 1", "data_parallel: 2"), "data_parallel"},
		{"huge parallelism", sub("data_parallel: 1", "data_parallel: 4611686018427387904"), "data_parallel"},
		{"tp the model refuses", sub("tensor_parallel: 8", "tensor_parallel: 3"), "tensor_parallel_size"},
		{"concurrency over max_num_seqs", sub("max_num_seqs: 256", "max_num_seqs: 32"), "workload.concurrency"},
		{"dataset", sub("dataset: random", "dataset: sonnet"), "workload.dataset"},
		{"sharegpt without lengths", sub("dataset: random", "dataset: sharegpt"), "workload.lengths_from"},
		{"too long", sub("output_len: 1000", "output_len: 1100"), "workload.output_len"},
		{"no quote", good[:strings.Index(good, "  quote:")] + good[strings.Index(good, "  notes:"):], "quote"},
		{"no metric", sub("metric: 'Output token throughput (tok/s)', ", ""), "published.metric"},
		{"duplicate id", good + good, "unique id"},
		{"empty", "", "no rows"},
		{"not a list", "id: x\n", "not a list"},
		{"not a mapping", "- 3\n", "row 1"},
	}
	for _, tt := range tests {
		_, err := ParseServing([]byte(tt.data))
		if err == nil {
			t.Errorf("%s: ParseServing succeeded, want an error naming %q", tt.name, tt.want)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v does not wrap ErrInvalid", tt.name, err)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q, want it to name %q", tt.name, err, tt.want)
		}
		if tt.name != "empty" && tt.name != "not a list" && tt.name != "not a mapping" && tt.name != "duplicate id" &&
			!strings.Contains(err.Error(), "recipes-v6e8-llama3.3-70b-c64") {
			t.Errorf("%s: error %q does not name the row", tt.name, err)
		}
	}
}

// TestServingHandComputed holds the report to a row worked by hand: one
// v5e chip, TP 1, four requests of 100 + 200 tokens at concurrency 4,
// llama2-7b in bf16, a token budget of 512. At TP 1 on one chip there is
// no all-reduce and the device holds every weight. Every step also
// samples 8 padded sequences' logits (32000 each, 18 HBM bytes a logit)
// and costs vLLM's fixed step time. The simulation runs:
//
//	step 0: the four prompts, 400 tokens in the budget, padded to 512
//	        (tpu-inference's power-of-two bucket) and 8 sequences: the
//	        matmuls bound by the MXU, 512 tokens of the matmuls but the
//	        output projection and 8 of it; then the attention kernel over
//	        the prompts (inference's [ti-rpa3]: on v5e with 32 query
//	        heads a KV head, query blocks of min(1024/1, 512/2) = 256
//	        tokens, keys computed min(512, 512/2) = 256 at a time, pages
//	        of 32 tokens): each prompt one query block of 256 rows over
//	        one key block of 256, 4·256·256 pairs on the MXU, longer than
//	        reading the 400 tokens' KV; each sequence emits its first
//	        token.
//	steps 1..199: a decode of the four: the weights (2 bytes a
//	        parameter), then each sequence's context of 100 + j tokens at
//	        32 layers × 2 (K, V) × 32 KV heads × 128 × 2 bytes, read in
//	        640 ns a token, longer than its 262144 elements take the MXUs
//	        (197e12/256 a second: 341 ns), which overlap with the read.
//
// The mean inter-token latency is then the plan's step at the mean
// context 100 + 200/2 (the limit where simulation and roofline agree);
// output tokens/s = 800 over the sum of the steps. The errors are against
// published figures of 1000 tokens/s and 10 ms.
func TestServingHandComputed(t *testing.T) {
	row := ServingRow{Cited: Cited{ID: "hand"}, Set: SetA, Engine: EngineVLLM, Model: "llama2-7b", AcceleratorType: "v5litepod-1", TP: 1, DP: 1,
		Weights: "bf16", KVCache: "bf16", MaxModelLen: 512, MaxBatched: 512, MemoryUtil: 1,
		Workload:  Workload{Dataset: DatasetRandom, NumPrompts: 4, Concurrency: 4, InputLen: 100, OutputLen: 200},
		Published: ServingPublished{Metric: "hand", OutputTokensPerS: 1000, MeanITLms: 10}}
	rep, err := EvaluateServing([]ServingRow{row})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := model.Lookup("llama2-7b")
	chip, err := hw.Lookup("v5e")
	if err != nil {
		t.Fatal(err)
	}
	weights := float64(m.ParamCount().Total()) * 2
	kvToken := float64(32 * 2 * 32 * 128 * 2)
	bw, peak := float64(chip.HBMBandwidth), float64(chip.PeakBF16)
	logits := 2 * float64(m.Vocab*m.DModel)
	body := 2*float64(m.MatmulParams()) - logits
	fixed := 8*32000*18/bw + inference.StepOverhead(inference.VLLM).Seconds() // sampling, then the fixed step time
	kernel := max(4*256*256*m.AttentionFLOPsPerToken(1)/peak, 400*kvToken/bw)
	prefill := max((512*body+8*logits)/peak, weights/bw) + kernel + fixed
	total := prefill
	for j := 1; j <= 199; j++ {
		total += weights/bw + 4*float64(100+j)*kvToken/bw + fixed
	}
	meanStep := weights/bw + 4*(100+100)*kvToken/bw + fixed // seconds
	wantTPS := 800 / total
	wantErr := (wantTPS - 1000) / 1000
	wantITLErr := (meanStep*1e3 - 10) / 10
	r := rep.Results[0]
	if !r.Modelled {
		t.Fatal("the hand row is not modelled")
	}
	if got := r.Sim.TokensPerSecond; math.Abs(got-wantTPS) > 1e-6*wantTPS {
		t.Errorf("predicted %.3f output tokens/s, want %.3f (800 tokens / %.4f ms)", got, wantTPS, total*1e3)
	}
	if got := r.Layout.ITL.Seconds(); math.Abs(got-meanStep) > 1e-6*meanStep {
		t.Errorf("roofline ITL %.6f ms, want %.6f ms", got*1e3, meanStep*1e3)
	}
	if math.Abs(r.Error-wantErr) > 1e-5 || math.Abs(r.ITLError-wantITLErr) > 1e-5 || !math.IsNaN(r.TTFTError) {
		t.Errorf("error %v, ITL error %v, TTFT error %v, want %v, %v and NaN (not published)", r.Error, r.ITLError, r.TTFTError, wantErr, wantITLErr)
	}
}

// TestServingResult: the errors of a hand-made simulation and the refusal
// of a hand-made layout.
func TestServingResult(t *testing.T) {
	row := ServingRow{Published: ServingPublished{OutputTokensPerS: 100, MeanTTFTms: 40, MeanITLms: 25}}
	l := inference.Layout{Fits: false}
	sim := inference.SimResult{TokensPerSecond: 150, TTFT: inference.Percentiles{Mean: 50 * time.Millisecond}, ITL: inference.Percentiles{Mean: 20 * time.Millisecond}}
	r := servingResult(row, l, sim)
	if math.Abs(r.Error-0.5) > 1e-12 || math.Abs(r.TTFTError-0.25) > 1e-12 || math.Abs(r.ITLError+0.2) > 1e-12 {
		t.Errorf("errors %v, %v, %v, want 0.5, 0.25, -0.2", r.Error, r.TTFTError, r.ITLError)
	}
	if !r.Refused() {
		t.Error("Refused() = false for a layout that does not fit, want true")
	}
}

// TestServingSummary: the median |error| is over the rows that were
// compared; rows not modelled and refused rows are counted, not averaged;
// each engine and set on its own.
func TestServingSummary(t *testing.T) {
	res := func(set, engine string, modelled, fits bool, e float64) ServingResult {
		return ServingResult{Row: ServingRow{Set: set, Engine: engine}, Modelled: modelled, Layout: inference.Layout{Fits: fits}, Error: e}
	}
	rep := ServingReport{Results: []ServingResult{
		res(SetA, EngineJetStreamPyTorch, true, true, 2.0), res(SetA, EngineJetStreamPyTorch, true, true, 3.0),
		res(SetA, EngineVLLM, true, true, -0.5), res(SetA, EngineVLLM, true, false, 9), res(SetA, EngineVLLM, false, false, math.NaN()),
		res(SetB, EngineVLLM, true, true, 0.1),
	}}
	tests := []struct {
		set, engine string
		want        ServingStats
	}{
		{SetA, "", ServingStats{Set: SetA, N: 5, NotModelled: 1, Refused: 1, Compared: 3, Median: 2.0, Min: -0.5, Max: 3.0}},
		{SetA, EngineJetStreamPyTorch, ServingStats{Set: SetA, Engine: EngineJetStreamPyTorch, N: 2, Compared: 2, Median: 2.5, Min: 2, Max: 3}},
		{SetA, EngineVLLM, ServingStats{Set: SetA, Engine: EngineVLLM, N: 3, NotModelled: 1, Refused: 1, Compared: 1, Median: 0.5, Min: -0.5, Max: -0.5}},
		{SetB, "", ServingStats{Set: SetB, N: 1, Compared: 1, Median: 0.1, Min: 0.1, Max: 0.1}},
	}
	for _, tt := range tests {
		if got := rep.Summary(tt.set, tt.engine); got != tt.want {
			t.Errorf("Summary(%s, %q) = %+v, want %+v", tt.set, tt.engine, got, tt.want)
		}
	}
}

// TestServingJSON: every row is in the JSON; a modelled row carries its
// prediction, a row not modelled none.
func TestServingJSON(t *testing.T) {
	rep, err := BuiltInServingReport()
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back ServingJSON
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(rep.Results) {
		t.Fatalf("WriteJSON: %v, %d rows, want %d", err, len(back.Rows), len(rep.Results))
	}
	for i, r := range back.Rows {
		if (r.PredictedTokensPS != nil) != rep.Results[i].Modelled || (r.Error != nil) != rep.Results[i].Modelled {
			t.Errorf("%s: modelled %v, prediction %v, error %v: want both exactly when modelled", r.ID, rep.Results[i].Modelled, r.PredictedTokensPS, r.Error)
		}
	}
	if len(back.Summary) == 0 || back.Summary[0].Set != SetA || back.Summary[0].Engine != "" {
		t.Errorf("summary %+v, want set A's over all engines first", back.Summary)
	}
}

// FuzzParseServing: no input panics; a table that parses is valid, runs
// through the serving model without error and reads back the same after
// writing.
func FuzzParseServing(f *testing.F) {
	f.Add(servingYAML)
	i := bytes.Index(servingYAML, []byte("- id: recipes-v6e8-llama3.3-70b-c64"))
	j := bytes.Index(servingYAML, []byte("- id: recipes-v6e8-llama3.3-70b-c128"))
	f.Add(servingYAML[i:j])
	f.Add([]byte("- id: x\n  published: {output_tokens_per_s: .nan}\n"))
	f.Add([]byte("- {id: a, tensor_parallel: 1.5}\n"))
	f.Add([]byte("- {id: a, workload: &w {concurrency: 3}}\n- {id: b, workload: {<<: *w}}\n"))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseServing(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseServing error %v does not wrap ErrInvalid", err)
			}
			return
		}
		// simulating a whole table is the other tests' job: a fuzz input
		// as long as the table would take seconds an execution, which the
		// fuzzer's minimizer takes for a hung worker on a loaded machine
		if len(rows) <= 2 {
			if _, err := EvaluateServing(rows); err != nil {
				t.Fatalf("EvaluateServing of a parsed table: %v", err)
			}
		}
		out, err := yaml.Marshal(rows)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseServing(out)
		if err != nil {
			t.Fatalf("ParseServing(yaml.Marshal(rows)): %v\n%s", err, out)
		}
		if len(again) != len(rows) {
			t.Fatalf("read back %d rows, want %d", len(again), len(rows))
		}
		for i := range rows {
			if rows[i] != again[i] {
				t.Fatalf("row %d read back as %+v, want %+v", i, again[i], rows[i])
			}
		}
	})
}

// ExampleParseServing reads one row of a serving table and runs shardlab's
// serving model at its configuration: the simulation of its run.
func ExampleParseServing() {
	rows, err := ParseServing([]byte(`
- id: example-v6e8-70b
  source: {repo: AI-Hypercomputer/tpu-recipes, path: inference/trillium/vLLM/Llama3.x/README.md}
  date: 2026-04
  read: 2026-12-04
  set: A
  engine: vllm
  model: llama3-70b
  published_model: meta-llama/Llama-3.3-70B-Instruct
  accelerator_type: v6e-8
  tensor_parallel: 8
  data_parallel: 1
  weights: bf16
  kv_cache: bf16
  max_model_len: 2048
  max_num_batched_tokens: 512
  gpu_memory_utilization: 0.98
  workload: {dataset: random, num_prompts: 3000, concurrency: 64, input_len: 1000, output_len: 1000}
  published: {metric: 'Output token throughput (tok/s)', output_tokens_per_s: 2494.80}
  quote: 'Output token throughput (tok/s): 2494.80'
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := EvaluateServing(rows)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rep.Results[0]
	fmt.Printf("%s: published %.0f, predicted %.0f output tokens/s (%+.0f%%), fits %v\n",
		r.Row.ID, r.Row.Published.OutputTokensPerS, r.Sim.TokensPerSecond, 100*r.Error, r.Layout.Fits)
	// Output:
	// example-v6e8-70b: published 2495, predicted 2488 output tokens/s (-0%), fits true
}

// TestFitStepOverhead: the fit uses the calibration rows of its engine and
// nothing else. The hand row of TestServingHandComputed, published at
// what the serving model predicts for it with a fixed step time of 2 ms,
// fits 2 ms (to the fit's 0.1 ms); a held-out row of the same engine
// published at a tenth of that, and a JetStream calibration row, change
// nothing; published above the prediction with no step time, it fits 0
// (a fixed time is not negative).
func TestFitStepOverhead(t *testing.T) {
	row := ServingRow{Cited: Cited{ID: "hand"}, Set: SetA, Calibration: true, Engine: EngineVLLM, Model: "llama2-7b", AcceleratorType: "v5litepod-1", TP: 1, DP: 1,
		Weights: "bf16", KVCache: "bf16", MaxModelLen: 512, MaxBatched: 512, MemoryUtil: 1,
		Workload:  Workload{Dataset: DatasetRandom, NumPrompts: 4, Concurrency: 4, InputLen: 100, OutputLen: 200},
		Published: ServingPublished{Metric: "hand", OutputTokensPerS: 1}}
	req, err := row.Request()
	if err != nil {
		t.Fatal(err)
	}
	at := func(h time.Duration) float64 {
		o := row.SimOptions()
		o.StepOverhead = &h
		sim, err := inference.Simulate(req, inference.Estimate(req, 1, 1), o, rand.New(rand.NewPCG(ServingSeed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return sim.TokensPerSecond
	}
	row.Published.OutputTokensPerS = at(2 * time.Millisecond)
	held := row
	held.ID, held.Calibration, held.Published.OutputTokensPerS = "held", false, row.Published.OutputTokensPerS/10
	js := row
	js.ID, js.Engine = "js", EngineJetStreamPyTorch
	h, ids, err := FitStepOverhead([]ServingRow{row, held, js}, inference.VLLM)
	if err != nil || h < 1900*time.Microsecond || h > 2*time.Millisecond || len(ids) != 1 || ids[0] != "hand" {
		t.Errorf("fit %v on %v (%v), want 2ms (to 0.1 ms) on [hand]", h, ids, err)
	}
	row.Published.OutputTokensPerS = 1.01 * at(0)
	if h, _, err := FitStepOverhead([]ServingRow{row}, inference.VLLM); err != nil || h != 0 {
		t.Errorf("under-predicted with no step time: fit %v (%v), want 0", h, err)
	}
	if _, _, err := FitStepOverhead([]ServingRow{held}, inference.VLLM); err == nil {
		t.Error("no calibration row: no error")
	}
}

// TestStepOverheadIsFitted holds each engine's fixed step time
// (inference.StepOverhead) to what FitStepOverhead gives on the built-in
// table's calibration rows: the constant is the fit's, not chosen.
func TestStepOverheadIsFitted(t *testing.T) {
	rows, err := ServingRows()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []inference.Engine{inference.VLLM, inference.JetStream} {
		h, ids, err := FitStepOverhead(rows, e)
		if err != nil {
			t.Fatal(err)
		}
		if got := inference.StepOverhead(e); got != h {
			t.Errorf("StepOverhead(%v) = %v, want the fit on %v: %v", e, got, ids, h)
		}
	}
}

// TestServingAccuracy holds the serving model to issue 33's target on the
// built-in table: set A's held-out rows (those not fitted on) within a
// median |throughput error| of 15 %, and no published configuration of
// any set refused (a refused row's KV cache holds fewer sequences than
// the engine ran). Set B is prospective (rows added after the model and
// its fit): its error is reported by validate --serving, not held to the
// target it was not built against.
func TestServingAccuracy(t *testing.T) {
	rep, err := BuiltInServingReport()
	if err != nil {
		t.Fatal(err)
	}
	st := rep.SummaryOf(SetA, "", RowsHeldOut)
	if st.Compared == 0 {
		t.Errorf("set A has no held-out row compared")
	}
	if st.Median > 0.15 {
		t.Errorf("set A: held-out median |error| %.1f%% over %d rows, want at most 15%%", 100*st.Median, st.Compared)
	}
	for _, set := range rep.sets() {
		if all := rep.Summary(set, ""); all.Refused > 0 {
			t.Errorf("set %s: %d published configurations refused, want none", set, all.Refused)
		}
	}
}

func ExampleFitStepOverhead() {
	// one calibration row: four requests of 100 + 200 tokens on one v5e
	// chip, published at 200 output tokens/s
	row := ServingRow{Cited: Cited{ID: "hand"}, Set: SetA, Calibration: true, Engine: EngineVLLM, Model: "llama2-7b", AcceleratorType: "v5litepod-1",
		TP: 1, DP: 1, Weights: "bf16", KVCache: "bf16", MaxModelLen: 512, MaxBatched: 512, MemoryUtil: 1,
		Workload:  Workload{Dataset: DatasetRandom, NumPrompts: 4, Concurrency: 4, InputLen: 100, OutputLen: 200},
		Published: ServingPublished{Metric: "hand", OutputTokensPerS: 200}}
	h, ids, err := FitStepOverhead([]ServingRow{row}, inference.VLLM)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("vllm: %v a step, fitted on %v\n", h, ids)
	rep, err := EvaluateServing([]ServingRow{row})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := rep.SummaryOf(SetA, "", RowsCalibration)
	fmt.Printf("with the built-in %v: %d calibration row, error %+.0f%%\n", inference.StepOverhead(inference.VLLM), st.Compared, 100*st.Max)
	// Output:
	// vllm: 3ms a step, fitted on [hand]
	// with the built-in 7.7ms: 1 calibration row, error -19%
}

// TestSimOptionsRangeRatio: a random row with a range ratio r is
// simulated with each prompt and output length uniform over [⌊L·r⌋, L],
// as InferenceX's client draws them (1024·0.8 = 819.2 → 819, 8192·0.8 =
// 6553.6 → 6553); without one, every request has the published lengths.
func TestSimOptionsRangeRatio(t *testing.T) {
	row := ServingRow{Cited: Cited{ID: "r"}, Engine: EngineVLLM, Workload: Workload{Dataset: DatasetRandom, NumPrompts: 320, Concurrency: 64, InputLen: 8192, OutputLen: 1024, RangeRatio: 0.8}}
	if got, want := row.SimOptions().Load.Mix.String(), "uniform prompt 6553-8192, output 819-1024"; got != want {
		t.Errorf("range ratio 0.8: mix %q, want %q", got, want)
	}
	row.Workload.RangeRatio = 0
	if got, want := row.SimOptions().Load.Mix.String(), "fixed 8192+1024"; got != want {
		t.Errorf("no range ratio: mix %q, want %q", got, want)
	}
}

// TestServingDPAttentionRows: the rows whose server ran
// enable_dp_attention (tpu-recipes' Qwen3.5-397B) ask for it, and their
// layouts run attention data parallel over the 8 devices, the hybrid
// model's linear-attention states taken out of the KV cache's budget;
// each device's scheduler runs the server's max_num_seqs (tpu-inference's
// DPScheduler, inference's [ti-dps]), so the replica runs 8 × 64 = 512,
// more than the client's 128 (--max-concurrency=128, tpu-recipes
// inference/ironwood/vLLM/Qwen3.5-397B/README.md @c8cfe2f6).
func TestServingDPAttentionRows(t *testing.T) {
	rows, reqs := rowsWhere(t, func(r ServingRow) bool { return r.DPAttention })
	for i, r := range rows {
		req := reqs[i]
		l := inference.Estimate(req, r.TP, r.DP)
		if !req.AttentionDP() || l.AttentionDP != r.TP || l.Memory.Recurrent == 0 || !l.Fits {
			t.Errorf("%s: attention DP %v over %d devices, states %d bytes, fits %v; want DP over %d, states, fits", r.ID, req.AttentionDP(), l.AttentionDP, l.Memory.Recurrent, l.Fits, r.TP)
		}
		if l.SchedulerSeqs() != 64 || l.SeqsEach != 512 || l.Running() != 128 || l.QueueWait != 0 {
			t.Errorf("%s: max_num_seqs %d a scheduler, %d a replica, %d running, queue wait %v; want 64, 512, all 128, none", r.ID, l.SchedulerSeqs(), l.SeqsEach, l.Running(), l.QueueWait)
		}
		if o := r.SimOptions(); o.MaxNumSeqs != 64 || r.schedulers() != 8 || r.Workload.Concurrency != 128 {
			t.Errorf("%s: %d schedulers of max_num_seqs %d for %d clients, want 8 of 64 (512) for 128", r.ID, r.schedulers(), o.MaxNumSeqs, r.Workload.Concurrency)
		}
	}
	if n := len(rows); n != 2 {
		t.Errorf("%d rows ran enable_dp_attention, want the 2 Qwen3.5-397B rows", n)
	}
}

// TestJetStreamSlotsPerDevice: a jetstream-pytorch row run data parallel
// (shard_on_batch) has its batch_size slots sharded over its devices, so
// the replica simulated (one device) holds batch_size / DP of them: Gemma
// 2B's 512 over 8 v5e chips is 64 a chip. A tensor-parallel row's one
// replica holds them all.
func TestJetStreamSlotsPerDevice(t *testing.T) {
	for _, c := range []struct{ dp, conc, want int }{{8, 512, 64}, {8, 1024, 128}, {1, 96, 96}, {8, 12, 2}} {
		row := ServingRow{Cited: Cited{ID: "j"}, Engine: EngineJetStreamPyTorch, TP: 8 / c.dp, DP: c.dp,
			Workload: Workload{Dataset: DatasetRandom, NumPrompts: 2 * c.conc, Concurrency: c.conc, InputLen: 110, OutputLen: 305}}
		if got := row.SimOptions().MaxNumSeqs; got != c.want {
			t.Errorf("DP %d, batch %d: %d slots a device, want %d", c.dp, c.conc, got, c.want)
		}
	}
}

// TestServingMoEAllRowsRows: the rows whose image ran a tpu-inference from
// before its PR #2294 (tpu-recipes' Qwen3-Coder-480B, image
// nightly-20260330-2f76400-8c0b626) ask for every routed row on every
// device, and only MoE rows may (a dense row asking is refused by the
// serving model, naming the field).
func TestServingMoEAllRowsRows(t *testing.T) {
	rows, reqs := rowsWhere(t, func(r ServingRow) bool { return r.MoEAllRows })
	for i, r := range rows {
		req := reqs[i]
		if !req.MoEAllRows || !strings.Contains(r.Notes, "2f76400") {
			t.Errorf("%s: request all rows %v, notes name the image's tpu-inference %v; want both", r.ID, req.MoEAllRows, strings.Contains(r.Notes, "2f76400"))
		}
	}
	if n := len(rows); n != 3 {
		t.Errorf("%d rows dispatch all rows, want the 3 Qwen3-Coder-480B rows", n)
	}
	all, err := ServingRows()
	if err != nil {
		t.Fatal(err)
	}
	dense := all[0]
	dense.MoEAllRows = true
	if _, err := dense.Request(); err == nil || !strings.Contains(err.Error(), "moe_all_rows") {
		t.Errorf("%s (%s) with moe_all_rows: error %v, want one naming moe_all_rows", dense.ID, dense.Model, err)
	}
}

// rowsWhere is the serving table's rows that keep says, and their
// requests.
func rowsWhere(t *testing.T, keep func(ServingRow) bool) ([]ServingRow, []inference.Request) {
	t.Helper()
	rows, err := ServingRows()
	if err != nil {
		t.Fatal(err)
	}
	var out []ServingRow
	var reqs []inference.Request
	for _, r := range rows {
		if !keep(r) {
			continue
		}
		req, err := r.Request()
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		out, reqs = append(out, r), append(reqs, req)
	}
	return out, reqs
}

// TestServingFitAgreesWithInference: validate --serving and shardlab
// inference decide whether a row's server fits by one rule, inference's
// (Layout.Fits: vLLM starts a server whose pages hold one sequence of
// max_model_len tokens), whatever sequences each runs: validate costs a
// row at its max_num_seqs beside its clients (its concurrency alone when
// it sets none), shardlab inference at its max_num_seqs alone (the
// row's, each scheduler's, or its concurrency a replica when it sets
// none), each at the row's tensor-parallel size and replicas.
func TestServingFitAgreesWithInference(t *testing.T) {
	rows, err := ServingRows()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := EvaluateServing(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		row := res.Row
		if !res.Modelled {
			continue
		}
		req, err := row.Request()
		if err != nil {
			t.Fatal(err)
		}
		seqs := row.MaxNumSeqs // each scheduler's, as the server was given it
		if seqs == 0 {
			seqs = (row.Workload.Concurrency + row.DP - 1) / row.DP
		}
		req.MaxNumSeqs, req.DP, req.Concurrency = seqs, row.DP, 0
		req.MaxNumBatchedTokens = max(req.MaxNumBatchedTokens, seqs) // the budget's own rule is not the fit's
		if req, err = inference.NewRequest(req); err != nil {
			t.Fatalf("%s: %v", row.ID, err)
		}
		_, err = inference.Search(req)
		if refused := errors.Is(err, inference.ErrNoFit); refused != res.Refused() || (err != nil && !refused) {
			t.Errorf("%s: shardlab inference at max_num_seqs %d: %v; validate refused %v", row.ID, seqs, err, res.Refused())
		}
	}
}
