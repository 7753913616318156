package plan

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/schedule"
)

// TestOptionsMatchFields: every option is a field of Options, by its JSON
// key, in the same order, and every field is an option.
func TestOptionsMatchFields(t *testing.T) {
	var keys []Option
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		if k, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); k != "-" {
			keys = append(keys, Option(k))
		}
	}
	if !reflect.DeepEqual(keys, AllOptions()) {
		t.Errorf("Options' JSON keys are\n%v\nAllOptions() is\n%v", keys, AllOptions())
	}
	for _, o := range AllOptions() {
		if o.String() == "" || strings.Contains(o.String(), "_") {
			t.Errorf("Option(%q).String() = %q, want words", string(o), o.String())
		}
	}
}

func TestParseRequestDefaults(t *testing.T) {
	r, err := ParseRequest(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// llama3-8b: 8192-token sequences, so 4Mitok is 512 of them
	// (Llama 3 Herd, Table 3).
	if r.Model.Name != "llama3-8b" || r.Multislice.Slice.AcceleratorType() != "tpu7x-8" || r.Multislice.Slices != 1 ||
		r.Seq != 8192 || r.MaxGlobalBatch != 512 || r.GlobalBatch != 0 || r.Axes != nil || r.Remat != "" || r.Schedule != "" ||
		r.Precision != cost.MaxTextPrecision() || r.Quantization != cost.QuantNone || r.Attention != cost.AttentionFlash ||
		r.VocabTiles != 1 || r.Efficiency != 0 || r.HBMHeadroom != cost.DefaultHBMHeadroom || r.Top != 5 || r.ExampleCost != 0 {
		t.Errorf("ParseRequest(DefaultOptions()) = %+v", r)
	}
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Options)
		check func(Request) bool
	}{
		{"explicit zero headroom keeps none", func(o *Options) { o.HBMHeadroom = 0 }, func(r Request) bool { return r.HBMHeadroom == 0 }},
		{"seq", func(o *Options) { o.Seq = 1024 }, func(r Request) bool { return r.Seq == 1024 && r.MaxGlobalBatch == 4096 }},
		{"a fixed batch above the default limit raises it", func(o *Options) { o.GlobalBatch = "1024" },
			func(r Request) bool { return r.GlobalBatch == 1024 && r.MaxGlobalBatch == 1024 }},
		{"the default limit is at least one sequence", func(o *Options) { o.Seq = 8 << 20 },
			func(r Request) bool { return r.MaxGlobalBatch == 1 }},
		{"a given limit holds", func(o *Options) { o.GlobalBatch, o.MaxGlobalBatch = "256", "512" },
			func(r Request) bool { return r.GlobalBatch == 256 && r.MaxGlobalBatch == 512 }},
		{"interleaved takes 2 chunks", func(o *Options) { o.Schedule = "Interleaved" },
			func(r Request) bool { return r.Schedule == schedule.Interleaved && r.Chunks == 2 }},
		{"circular keeps 0 chunks (cost: 1)", func(o *Options) { o.Schedule = "circular" },
			func(r Request) bool { return r.Schedule == schedule.Circular && r.Chunks == 0 }},
		{"accumulation steps of a fixed layout and batch", func(o *Options) {
			o.TPU, o.Mesh, o.GlobalBatch, o.GradientAccumulationSteps = "v5p-8", "fsdp=4", "64", 8
		}, func(r Request) bool { return r.Accumulation == 8 }},
		{"1 step over a pipeline is no accumulation", func(o *Options) {
			o.TPU, o.Mesh, o.GlobalBatch, o.GradientAccumulationSteps = "v5p-8", "pipeline=2,fsdp=2", "64", 1
		}, func(r Request) bool { return r.Accumulation == 1 }},
		{"dot-product attention", func(o *Options) { o.Attention = "dot-product" }, func(r Request) bool { return r.Attention == cost.AttentionDot }},
		{"a bare generation holds only the chip", func(o *Options) { o.TPU = "ironwood" },
			func(r Request) bool {
				return r.Multislice.Slices == 0 && r.Multislice.Slice.Chip.Generation == hw.TPU7x
			}},
		{"slices and DCN", func(o *Options) { o.TPU, o.Slices, o.DCNGbps = "v5p-128", 2, 100 },
			func(r Request) bool { return r.Multislice.Slices == 2 && r.Multislice.DCNPerHost().Bits() == 100e9 }},
		{"a spec without a name takes the option's", func(o *Options) {
			o.Model, o.ModelSpec = "tiny.yaml", []byte("layers: 2\nd_model: 64\nheads: 4\nd_ff: 128\nvocab: 100\nseq_len: 32\n")
		}, func(r Request) bool { return r.Model.Name == "tiny.yaml" && r.Seq == 32 }},
	}
	for _, tt := range tests {
		o := DefaultOptions()
		tt.edit(&o)
		r, err := ParseRequest(o)
		if err != nil || !tt.check(r) {
			t.Errorf("%s: ParseRequest = %+v, %v", tt.name, r, err)
		}
	}
}

// requestErrors are TestParseRequestErrors' cases: an edit of the
// default options, the option its error names, and what the error says.
var requestErrors = []struct {
	edit func(*Options)
	opt  Option
	want string // in the error phrased with flag names
}{
	{func(o *Options) { o.Model = "llama4" }, OptionModel, `--model "llama4": want a catalog model (`},
	{func(o *Options) { o.Model, o.ModelSpec = "bad.yaml", []byte("layers: [1") }, OptionModel, "--model bad.yaml: malformed spec"},
	{func(o *Options) { o.Model = "gemma4-31b" }, OptionModel, "--model gemma4-31b: model = gemma4-31b (sliding_window 1024), want global attention in every layer: training a model with sliding-window layers is not modelled"},
	{func(o *Options) { o.TPU = "v9" }, OptionTPU, `--tpu "v9": unknown TPU generation`},
	{func(o *Options) { o.GlobalBatch, o.MaxGlobalBatch = "1024", "512" }, OptionGlobalBatch,
		`--global-batch "1024" is 1024 sequences, above --max-global-batch "512" (512 sequences): raise the limit or lower the batch`},
	{func(o *Options) { o.Seq, o.MaxGlobalBatch = 8<<20, "4Mitok" }, OptionMaxGlobalBatch, "4194304 tokens is less than one sequence of 8388608"},
	{func(o *Options) { o.TPU = "" }, OptionTPU, `--tpu: generation ""`},
	{func(o *Options) { o.TPU, o.Slices = "tpu7x", 2 }, OptionTPU, "--tpu tpu7x names no size; give an accelerator type (e.g. tpu7x-8) to use --topology, --slices or --dcn-gbps"},
	{func(o *Options) { o.TPU, o.Topology = "v5p-128", "4x4x6" }, OptionTopology, `--topology "4x4x6": not a valid topology`},
	// tpu7x-2 (one tpu7x-standard-1t, hw's catalog) is one slice; tpu7x-8 joins
	{func(o *Options) { o.TPU, o.Slices = "tpu7x-2", 2 }, OptionSlices, `--slices: slices "tpu7x-2": does not join a Multislice; valid: 1 slice of tpu7x-2`},
	{func(o *Options) { o.TPU, o.Slices = "v3-32", 2 }, OptionSlices, "Multislice"},
	{func(o *Options) { o.Slices = 0 }, OptionSlices, "--slices 0, want 1 to 4096"},
	{func(o *Options) { o.DCNGbps = 0.01 }, OptionDCNGbps, "--dcn-gbps 0.01, want 0.1 to 100000 Gbit/s per host"},
	{func(o *Options) { o.TPU, o.DCNGbps = "v5p-8", 100 }, OptionDCNGbps, "--dcn-gbps 100 with --slices 1: one slice sends nothing over DCN, so its bandwidth changes nothing; give --slices 2 or more, or no --dcn-gbps"},
	{func(o *Options) { o.Seq = -1 }, OptionSeq, "--seq -1, want 0 to"},
	{func(o *Options) { o.Model, o.Seq = "llama3-405b", 1<<24 }, OptionSeq, "--seq 16777216, want at most 8521760 tokens with 126 layers of width 16384"},
	{func(o *Options) { o.MaxGlobalBatch = "lots" }, OptionMaxGlobalBatch, `--max-global-batch "lots": want N sequences`},
	{func(o *Options) { o.GlobalBatch = "999999999999999999999tok" }, OptionGlobalBatch, "want at most 1073741824 sequences (1e+21 tokens is too many)"},
	{func(o *Options) { o.GlobalBatch = "4Mtok" }, OptionGlobalBatch, `--global-batch "4Mtok": 4000000 tokens is not a whole number of 8192-token sequences`},
	{func(o *Options) { o.Mesh = "data=4(tpu)" }, OptionMesh, "--mesh: data"},
	// a layout that does not fit the slices asked for is the user's mistake, named at parse time
	{func(o *Options) { o.Mesh = "data=3" }, OptionMesh, "--mesh: ICI factors = 3"},
	{func(o *Options) { o.Mesh, o.TPU, o.Slices = "fsdp=4,tensor=2(dcn)", "v5p-8", 2 }, OptionMesh, "--mesh: tensor = 2 over DCN: tensor parallelism over DCN"},
	{func(o *Options) { o.Mesh, o.TPU, o.Slices = "fsdp=4,context=2(dcn)", "v5p-8", 2 }, OptionMesh, "--mesh: context = 2 over DCN: context parallelism over DCN"},
	{func(o *Options) { o.Remat = "some" }, OptionRemat, `--remat: remat policy "some"`},
	{func(o *Options) { o.Schedule = "zigzag" }, OptionSchedule, `--schedule: unknown schedule "zigzag"`},
	{func(o *Options) { o.Chunks = 3 }, OptionChunks, "--chunks 3 needs --schedule interleaved or circular"},
	{func(o *Options) { o.TPU, o.Mesh, o.Schedule = "v5p-8", "fsdp=4", "gpipe" }, OptionSchedule, `--schedule gpipe with --mesh "fsdp=4", which has no pipeline`},
	{func(o *Options) { o.Chunks, o.Schedule = 1, "interleaved" }, OptionChunks, "--chunks 1 with --schedule interleaved, want 2 or more"},
	// a fixed pipeline that does not divide the layers is the user's layout, refused by --mesh
	// 80 layers on 32 chips: 5, 10, 20, 40 and 80 divide the layers, not the chips
	{func(o *Options) { o.Model, o.TPU, o.Mesh = "llama3-70b", "v5p-64", "pipeline=32" }, OptionMesh,
		`want a pipeline degree of 1, 2, 4, 8 or 16 (dividing the layers and the 32 chips)`},
	{func(o *Options) { o.TPU, o.Mesh = "v5p-384", "pipeline=3,fsdp=64" }, OptionMesh,
		`--mesh "pipeline=3,fsdp=64": pipeline 3 does not divide llama3-8b's 32 layers into whole stages, want a pipeline degree of 1, 2, 4, 8, 16 or 32 (dividing the layers and the 192 chips)`},
	// review 140: a dense model has no experts to put on an expert axis (llama3-8b, the default, is dense)
	{func(o *Options) { o.TPU, o.Mesh = "v5p-8", "expert=4" }, OptionMesh,
		`--mesh "expert=4": expert 4 with llama3-8b, a dense model: it has no experts to split, want a mesh without expert`},
	{func(o *Options) { o.TPU, o.Mesh = "tpu7x-8", "fsdp=4,expert=2" }, OptionMesh, `expert 2 with llama3-8b, a dense model`},
	// 32 layers over pipeline 4 x v chunks: v divides 8
	{func(o *Options) { o.TPU, o.Mesh, o.Schedule, o.Chunks = "v5p-8", "pipeline=4", "circular", 3 }, OptionChunks,
		`--chunks 3 with --mesh "pipeline=4": llama3-8b's 32 layers over pipeline 4 x 3 chunks is no whole number of layers a chunk, want 1, 2, 4 or 8`},
	// 18 layers over pipeline 2 x v chunks: v divides 9, and interleaved takes 2 or more
	{func(o *Options) {
		o.Model, o.TPU, o.Mesh, o.Schedule = "gemma-2b", "v5p-8", "pipeline=2,fsdp=2", "interleaved"
	}, OptionChunks,
		`--chunks 0 (2 for interleaved) with --mesh "pipeline=2,fsdp=2": gemma-2b's 18 layers over pipeline 2 x 2 chunks is no whole number of layers a chunk, want 3 or 9`},
	{func(o *Options) { o.Chunks, o.Schedule = 65, "circular" }, OptionChunks, "--chunks 65, want 0 to 64"},
	{func(o *Options) { o.GradientAccumulationSteps = -1 }, OptionGradientAccumulationSteps, "--gradient-accumulation-steps -1, want 0 to 1073741824 (0: the planner chooses)"},
	{func(o *Options) { o.GlobalBatch, o.GradientAccumulationSteps = "64", 4 }, OptionGradientAccumulationSteps, "--gradient-accumulation-steps 4 needs --mesh: a search chooses each layout's micro-batches itself"},
	{func(o *Options) { o.TPU, o.Mesh, o.GradientAccumulationSteps = "v5p-8", "fsdp=4", 4 }, OptionGradientAccumulationSteps, "--gradient-accumulation-steps 4 needs --global-batch"},
	// MaxText's step is gradient_accumulation_steps micro-batches of one size (configs/types.py calculate_global_batch_sizes)
	{func(o *Options) {
		o.TPU, o.Mesh, o.GlobalBatch, o.GradientAccumulationSteps = "v5p-8", "fsdp=4", "96", 64
	}, OptionGradientAccumulationSteps,
		"--gradient-accumulation-steps 64 does not divide --global-batch 96: MaxText's step is gradient_accumulation_steps micro-batches of one size"},
	{func(o *Options) {
		o.TPU, o.Mesh, o.GlobalBatch, o.GradientAccumulationSteps = "v5p-8", "pipeline=2,fsdp=2", "64", 4
	}, OptionGradientAccumulationSteps,
		`--gradient-accumulation-steps 4 with --mesh "pipeline=2,fsdp=2", which has a pipeline`},
	// a fixed layout's batch shards (data x fsdp x expert, and a
	// micro-batch a stage) must split the batch: the batch's fault
	{func(o *Options) { o.TPU, o.Mesh, o.GlobalBatch = "v5p-128", "fsdp=64", "1" }, OptionGlobalBatch,
		`--global-batch "1" is 1 sequence, which --mesh "fsdp=64" cannot split (64 batch shards: data x fsdp x expert, MaxText's activation_batch), want a multiple of 64, such as 64`},
	{func(o *Options) { o.TPU, o.Mesh, o.GlobalBatch = "v5p-128", "fsdp=16,pipeline=4", "96" }, OptionGlobalBatch,
		`--global-batch "96" is 96 sequences, which --mesh "fsdp=16,pipeline=4" cannot split (16 batch shards: data x fsdp x expert, MaxText's activation_batch, times at least one micro-batch for each of its 4 pipeline stages), want a multiple of 64, such as 64 or 128`},
	// cost's shape refuses a micro-batch data x fsdp x expert do not split
	{func(o *Options) {
		o.TPU, o.Mesh, o.GlobalBatch, o.GradientAccumulationSteps = "v5p-64", "fsdp=32", "64", 4
	}, OptionGradientAccumulationSteps, `--gradient-accumulation-steps 4 leaves micro-batches of 16 sequences, which do not split over --mesh "fsdp=32"'s 32 batch shards (data x fsdp x expert, MaxText's activation_batch), want one of 1, 2`},
	{func(o *Options) { o.Precision = "fp64" }, OptionPrecision, `--precision: precision "fp64"`},
	{func(o *Options) { o.Precision = "" }, OptionPrecision, `--precision: precision ""`},
	{func(o *Options) { o.RematCustom = "query_proj=offload" }, OptionRematCustom, `--remat-custom "query_proj=offload" needs --remat custom`},
	{func(o *Options) { o.Remat, o.RematCustom = "custom", "bogus=device" }, OptionRematCustom, `--remat-custom: tensor "bogus"`},
	{func(o *Options) { o.Quantization = "fp4" }, OptionQuantization, `--quantization: quantization "fp4"`},
	{func(o *Options) { o.TPU, o.Quantization = "v5litepod-4", "fp8" }, OptionQuantization, "--quantization \"fp8\": TPU v5e publishes no fp8 peak, want none (bf16) or int8"},
	{func(o *Options) { o.Attention = "" }, OptionAttention, `--attention "", want flash or dot_product`},
	{func(o *Options) { o.VocabTiles = 0 }, OptionVocabTiles, "--vocab-tiles 0, want 1 to 65536"},
	{func(o *Options) { o.Efficiency = 1.5 }, OptionEfficiency, "--efficiency 1.5, want a number in [0.01, 1], or 0"},
	{func(o *Options) { o.HBMHeadroom = 1 }, OptionHBMHeadroom, "--hbm-headroom 1, want a fraction in [0, 1)"},
	{func(o *Options) { o.Top = 0 }, OptionTop, "--top 0, want 1 to 100"},
	{func(o *Options) { o.CapacityFactor = 1.25 }, OptionCapacityFactor, "--capacity-factor 1.25, but llama3-8b has no experts: it applies to a mixture-of-experts model only"},
	{func(o *Options) { o.LoadImbalance = 1.5 }, OptionLoadImbalance, "--load-imbalance 1.5, but llama3-8b has no experts"},
	{func(o *Options) { o.ExampleCost = -time.Second }, OptionExampleCost, "--example-cost -1s, want 0s to 1h0m0s"},
}

func TestParseRequestErrors(t *testing.T) {
	for _, tt := range requestErrors {
		o := DefaultOptions()
		tt.edit(&o)
		_, err := ParseRequest(o)
		var oe *OptionError
		if !errors.As(err, &oe) || !errors.Is(err, ErrRequest) {
			t.Errorf("ParseRequest(%+v) error = %v, want an *OptionError wrapping ErrRequest", o, err)
			continue
		}
		if got := oe.Phrase(flagName); oe.Option != tt.opt || !strings.Contains(got, tt.want) {
			t.Errorf("ParseRequest error names %q: %q; want %q and %q", oe.Option, got, tt.opt, tt.want)
		}
		if !strings.HasPrefix(err.Error(), "plan: ") || strings.Contains(err.Error(), "{") {
			t.Errorf("error %q does not read as plan's own", err)
		}
	}
}

func TestExamples(t *testing.T) {
	o := DefaultOptions()
	o.Seq = 4096
	var got []string
	for _, e := range o.Examples() {
		r, err := ParseRequest(e)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s on %s, seq %d", r.Model.Name, r.Multislice, r.Seq))
	}
	want := []string{"llama3-8b on tpu7x-8 (2x2x1, 4 chips), seq 4096", "llama3-70b on 2 slices of tpu7x-128 (4x4x4, 64 chips each; 128 chips in all), seq 4096"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Examples() = %q, want %q", got, want)
	}
}

func TestParseBatch(t *testing.T) {
	tests := []struct {
		in    string
		exact bool
		want  int
	}{
		{"512", true, 512},
		{"512seq", true, 512},
		{"4Mitok", true, 512}, // 4 × 1024² tokens of 8192
		{"4194304tok", true, 512},
		{"4Mtok", false, 488}, // 4e6 / 8192, rounded down
		{"1Ki", true, 1024},
		{" 2k ", true, 2000},
	}
	for _, tt := range tests {
		got, err := ParseBatch(tt.in, 8192, tt.exact)
		if err != nil || got != tt.want {
			t.Errorf("ParseBatch(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5", "4Mtok", "100tok", "NaN", "Inf", "1e3", "tok", "2x", "2Gi",
		"0x200", "0x1p9", "0X1P9", "0x1p9tok", "0x1p3k", "1_024", "0_1"} { // issue 26: decimal only
		var be *BatchError
		if _, err := ParseBatch(in, 8192, true); !errors.As(err, &be) || be.Input != in || !errors.Is(err, ErrRequest) {
			t.Errorf("ParseBatch(%q) error = %v, want a *BatchError", in, err)
		}
	}
}

func FuzzParseBatch(f *testing.F) {
	for _, s := range []string{"512", "4Mitok", "1Kiseq", "-3", "0.5Mtok", "9e99"} {
		f.Add(s, 8192, true)
	}
	f.Fuzz(func(t *testing.T, s string, seq int, exact bool) {
		if seq < 1 || seq > 1<<20 {
			return
		}
		n, err := ParseBatch(s, seq, exact)
		if err == nil && (n < 1 || n > MaxBatch) {
			t.Fatalf("ParseBatch(%q) = %d", s, n)
		}
	})
}

// FuzzParseRequest: whatever the text options, ParseRequest accepts them
// or refuses one with an *OptionError, and never panics.
func FuzzParseRequest(f *testing.F) {
	d := DefaultOptions()
	f.Add(d.Model, d.TPU, "", "", d.MaxGlobalBatch, "", "", "", "", d.Precision, d.Quantization, d.Attention, 1, 0)
	f.Add("llama3-70b", "v5p-128", "4x4x8", "1Mitok", "2Mitok", "fsdp=64,data=2", "custom", "query_proj=offload", "circular", "bf16", "int8", "flash", 2, 4)
	f.Add("gemma2-9b", "tpu7x", "", "", "512", "", "", "", "interleaved", "zero", "fp8", "dot_product", 1, 2)
	f.Add("llama3-70b", "tpu7x-128", "", "", "512", "data=2(dcn),fsdp=64,context=2", "", "", "", "maxtext", "none", "flash", 2, 0)
	f.Fuzz(func(t *testing.T, modelName, tpu, topology, batch, maxBatch, meshSpec, remat, custom, sched, precision, quant, attention string, slices, chunks int) {
		o := DefaultOptions()
		o.Model, o.TPU, o.Topology, o.GlobalBatch, o.MaxGlobalBatch, o.Mesh = modelName, tpu, topology, batch, maxBatch, meshSpec
		o.Remat, o.RematCustom, o.Schedule, o.Precision, o.Quantization, o.Attention = remat, custom, sched, precision, quant, attention
		o.Slices, o.Chunks = slices, chunks
		if _, err := ParseRequest(o); err != nil {
			var oe *OptionError
			if !errors.As(err, &oe) || !errors.Is(err, ErrRequest) {
				t.Fatalf("ParseRequest error %v is not an *OptionError", err)
			}
		}
	})
}
