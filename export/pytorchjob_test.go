package export

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/plan"
)

// pytorchScript is the script of p's export.
func pytorchScript(t *testing.T, p plan.Plan) string {
	t.Helper()
	m, err := PyTorch(p)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := m.WritePython(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPyTorchWritesTheCostedJob: the script states the job its plan was
// costed as, by hand: llama3-8b on v5p-64 (32 chips, one device each) as
// data=2,fsdp=16 with a global batch of 64 sequences of 8192 tokens holds
// 64 / (2 × 16) = 2 sequences a device; on tpu7x-8 (4 chips of 2 devices)
// fsdp=8 in devices with 16 sequences, 16 / 8 = 2. Remat full is checkpoint_module on
// every decoder layer, imported once, applied before FSDPv2; remat none
// writes no checkpointing.
func TestPyTorchWritesTheCostedJob(t *testing.T) {
	for _, c := range []struct {
		tpu, layout, batch, remat string
		perDevice                 int
	}{
		{"v5p-64", "data=2,fsdp=16", "64", "full", 2},
		{"v5p-64", "data=2,fsdp=16", "64", "none", 2},
		{"tpu7x-8", "fsdp=8", "16", "full", 2},
		{"v5p-64", "data=32", "32", "none", 1},
	} {
		p := search(t, func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Remat = "llama3-8b", c.tpu, c.layout, c.batch, c.remat
			o.Framework = string(plan.FrameworkPyTorch)
		})
		py := pytorchScript(t, p)
		what := fmt.Sprintf("%s %s remat %s", c.tpu, c.layout, c.remat)
		for _, want := range []string{
			"GLOBAL_BATCH = " + c.batch + "  #", "SEQ_LEN = 8192  #", fmt.Sprintf("BATCH_PER_DEVICE = %d  #", c.perDevice),
			"torch.autocast('xla', dtype=torch.bfloat16)", "flash_attention(query, key, value, causal=True, sm_scale=scale,",
		} {
			if !strings.Contains(py, want) {
				t.Errorf("%s: the script lacks %q:\n%s", what, want, py)
			}
		}
		full := c.remat == "full"
		if got := strings.Count(py, "from torch_xla.distributed.fsdp import checkpoint_module\n"); got != map[bool]int{true: 1}[full] {
			t.Errorf("%s: checkpoint_module imported %d times", what, got)
		}
		if got := regexp.MustCompile(`for layer in layers:\n\s+checkpoint_module\(layer\)`).MatchString(py); got != full {
			t.Errorf("%s: every decoder layer checkpointed %v, want %v:\n%s", what, got, full, py)
		}
		if !strings.Contains(py, "    model.config.use_cache = False\n") {
			t.Errorf("%s: the KV cache is left on:\n%s", what, py)
		}
		_, wrap, _ := strings.Cut(py, "def wrap_model(model):")
		if !strings.Contains(wrap, "remat(model)") {
			t.Errorf("%s: wrap_model does not apply remat:\n%s", what, wrap)
		}
	}
}

// TestPyTorchRefusesWhatItCannotWrite: a plan whose settings or layout
// the script would not run as costed is refused, naming the setting.
func TestPyTorchRefusesWhatItCannotWrite(t *testing.T) {
	for _, c := range []struct {
		edit func(*plan.Options)
		want string
	}{
		{func(o *plan.Options) { o.Remat = string(cost.RematMinimal) }, "remat minimal; none or full"},
		{func(o *plan.Options) { o.Precision = "zero" }, "precision zero; maxtext (an fp32 model under autocast) or bf16"},
		{func(o *plan.Options) { o.Quantization = "int8" }, "quantization int8; none"},
		{func(o *plan.Options) { o.OptimizerOffload = true }, "optimizer offload on; off"},
		{func(o *plan.Options) { o.VocabTiles = 2 }, "vocab tiles 2; 1"},
		{func(o *plan.Options) {
			o.Model, o.Mesh, o.GlobalBatch = "mixtral-8x7b", "fsdp=8,expert=4", "64"
		}, "expert 4; a layout of data, fsdp and tensor only"},
	} {
		p := search(t, func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Remat = "llama3-8b", "v5p-64", "fsdp=32", "64", "full"
			c.edit(o)
		})
		if _, err := PyTorch(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PyTorch = %v, want a refusal containing %q", err, c.want)
		}
	}
}

// TestFrameworkPyTorchSearchesWhatItWrites: searched for PyTorch, a plan
// and its alternatives keep to data, fsdp and tensor, one pass a step and
// remat none or full, and the export writes it; among them the two jobs
// whose plan for any framework the export refuses (context parallelism
// for Llama 3 70B on two v5p-128 slices), and Gemma 7B, whose layers
// have Llama's modules. A mixture of experts is refused under PyTorch
// (TestPyTorchRefusesMixturesOfExperts).
func TestFrameworkPyTorchSearchesWhatItWrites(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		slices     int
	}{{"llama3-70b", "v5p-128", 2}, {"gemma-7b", "v5p-64", 1}, {"llama3-8b", "v6e-8", 1}} {
		p := search(t, func(o *plan.Options) {
			o.Model, o.TPU, o.Slices, o.Framework = c.model, c.tpu, c.slices, string(plan.FrameworkPyTorch)
		})
		for _, k := range append(append([]plan.Candidate{}, p.Top...), p.Alternatives...) {
			e := k.Estimate
			for _, a := range []mesh.Axis{mesh.Pipeline, mesh.Context, mesh.Expert} {
				if e.Mesh.Size(a) > 1 {
					t.Errorf("%s on %s: %s has %s", c.model, c.tpu, e.Mesh, a)
				}
			}
			if e.Job.MicroBatches > 1 || (e.Job.Remat != cost.RematNone && e.Job.Remat != cost.RematFull) {
				t.Errorf("%s on %s: %s with %d micro-batches, remat %s", c.model, c.tpu, e.Mesh, e.Job.MicroBatches, e.Job.Remat)
			}
		}
		if _, err := PyTorch(p); err != nil {
			t.Errorf("%s on %s: %v", c.model, c.tpu, err)
		}
	}
}

// TestPyTorchPlanHasNoMaxTextCompile: a plan for PyTorch/XLA offers no
// MaxText compile as its check (train_compile compiles another program
// than the script) and says why, with a reason a script can branch on.
func TestPyTorchPlanHasNoMaxTextCompile(t *testing.T) {
	p := search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.Framework = "llama3-8b", "v5p-16", string(plan.FrameworkPyTorch)
	})
	v := Verify(p, "")
	if v.Why != WhyPyTorch || v.Compile != "" || !strings.Contains(v.Unavailable, "PyTorch/XLA has no compile") {
		t.Errorf("Verify = %+v, want no compile, WhyPyTorch", v)
	}
	p = search(t, func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v5p-16" })
	if v := Verify(p, ""); v.Why != "" || v.Compile == "" {
		t.Errorf("any framework: Verify = %+v, want the compile", v)
	}
}

// TestPyTorchSaysWhetherRepeatedKVWasCosted: the script's attention
// repeats Llama 3 8B's 8 key and value heads to the query's 32, and its
// comment says whether the plan counted the repeated ones: a plan made
// for the pytorch framework does (cost.Settings.RepeatKV), so the
// comment says "as the plan counts them"; one searched for any framework
// (bf16, remat full: a job the export writes) does not, and the comment
// says so and how much more a layer keeps, (32 - 8) x 128 x 2 = 6144
// elements a token.
func TestPyTorchSaysWhetherRepeatedKVWasCosted(t *testing.T) {
	costed := pytorchPython(t, "llama3-8b", "v5p-64", "fsdp=32", "")
	if !strings.Contains(costed, "# Repeated, K and V are held at the query's 32 heads, as the plan counts them (MaxText's kernel keeps the 8)") ||
		!strings.Contains(costed, "= 6144 more elements a token") {
		t.Errorf("framework pytorch: want the repeated K and V said to be counted:\n%s", costed)
	}
	p := search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.Precision, o.Remat = "llama3-8b", "v5p-64", "fsdp=32", "bf16", "full"
	})
	if p.Best.Estimate.Job.RepeatKV {
		t.Fatalf("a plan for any framework costs repeated K and V")
	}
	uncosted := pytorchScript(t, p)
	if !strings.Contains(uncosted, "# Repeated, K and V are held at the query's 32 heads, not the 8 the plan counts") ||
		!strings.Contains(uncosted, "= 6144 more elements a token") {
		t.Errorf("framework any: want the repeated K and V said to be uncounted:\n%s", uncosted)
	}
}
