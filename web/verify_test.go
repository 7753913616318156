package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"shardlab/export"
	"shardlab/plan"
)

// verifySection is the page's verify steps, unescaped.
func verifySection(t *testing.T, target string) string {
	t.Helper()
	code, body := get(t, New(testConfig), target)
	i, j := strings.Index(body, "<h3>Verify before renting TPUs</h3>"), strings.Index(body, "<h3>Goodput")
	if code != http.StatusOK || i < 0 || j < i {
		t.Fatalf("GET %s = %d, no verify steps: %.400s", target, code, body)
	}
	return html.UnescapeString(body[i:j])
}

// TestPageVerifySteps: plan --verify printed how to compile a plan ahead
// of time and check the compiler's memory against it; the page (issue
// 27's "and the web UI") said nothing. It shows the compile of the file
// its MaxText download writes, and the check with the job named and the
// options the form changed, as flags.
func TestPageVerifySteps(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices, o.Seq, o.CausalFLOPs = "llama3-70b", "tpu7x-128", 2, 4096, false
	q := queryOf(o)
	v := verifySection(t, "/?"+q)
	_, yml := get(t, New(testConfig), "/download/maxtext.yaml?"+q)
	for _, want := range []string{
		"compile_topology=tpu7x-128 compile_topology_num_slices=2",
		"shardlab check --compile-log compile.log --model llama3-70b --tpu tpu7x-128 --slices 2 --seq 4096 --causal-flops=false --mesh '",
		// this plan puts the step at XLA's limit: no factor, no file
		"writes no calibration",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("verify steps lack %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "--write-calibration") || strings.Contains(v, "plan --calibration") {
		t.Errorf("a plan at XLA's limit: its steps calibrate:\n%s", v)
	}
	// below the limit, the check writes the calibration the page names
	below := o
	below.GlobalBatch = "128"
	if b := verifySection(t, "/?"+queryOf(below)); !strings.Contains(b, "--write-calibration calibration.json") || !strings.Contains(b, "shardlab plan --calibration calibration.json</code> with the same flags") {
		t.Errorf("a plan below XLA's limit: its steps lack the calibration:\n%s", b)
	}
	// the compile names the file the download is, whose run_name it sets
	file := strings.Fields(v[strings.Index(v, "train_compile ")+len("train_compile "):])[0]
	if !strings.Contains(yml, "run_name="+strings.TrimSuffix(file, ".yml")) {
		t.Errorf("the compile names %s, the download is another config:\n%.300s", file, yml)
	}
	if strings.Contains(v, "--max-global-batch") || strings.Contains(v, "--framework") {
		t.Errorf("verify steps pass an option only the search reads:\n%s", v)
	}
}

// TestPageVerifySpecAndNoTarget: a pasted spec is named by the file the
// page asks it saved in; a slice MaxText cannot compile for says so.
func TestPageVerifySpecAndNoTarget(t *testing.T) {
	spec := "name: small\ngated_mlp: true\nlayers: 8\nd_model: 1024\nheads: 8\nd_ff: 4096\nvocab: 32000\nseq_len: 2048\n"
	v := verifySection(t, "/?model=spec&tpu=v5p-8&model_spec="+url.QueryEscape(spec))
	if !strings.Contains(v, "save the model spec as <code>model.yml</code>") || !strings.Contains(v, "--model model.yml --tpu v5p-8") {
		t.Errorf("pasted spec's verify steps:\n%s", v)
	}
	// plan.json, which has no page around its steps, says so in a note
	code, body := get(t, New(testConfig), "/download/plan.json?model=spec&tpu=v5p-8&model_spec="+url.QueryEscape(spec))
	if code != http.StatusOK || !strings.Contains(body, `"save the model spec pasted into the page as model.yml: the commands' --model names it"`) {
		t.Errorf("plan.json of a pasted spec = %d, want its verify notes to say where to save the spec:\n%.2000s", code, body)
	}
	v = verifySection(t, "/?model=spec&tpu=v3-8&model_spec="+url.QueryEscape(spec))
	if !strings.Contains(v, "no ahead-of-time compile target") || strings.Contains(v, "shardlab check") {
		t.Errorf("v3-8's verify steps:\n%s", v)
	}
}

// TestPageVerifyUnfit: the page offered the verify steps for a layout
// that does not fit, whose download answers 422; it says there is
// nothing to compile. The layout is of one pass, given: the planner
// would run the batch as 2 micro-batches, which fit.
func TestPageVerifyUnfit(t *testing.T) {
	v := verifySection(t, "/?model=llama3-405b&tpu=tpu7x-256&mesh="+url.QueryEscape("fsdp=64,tensor=4")+"&global_batch=256&remat=save_qkv_proj&gradient_accumulation_steps=1")
	if !strings.Contains(v, "the layout does not fit (HBM by ") || strings.Contains(v, "shardlab check") {
		t.Errorf("verify steps of a layout that does not fit:\n%s", v)
	}
}

// TestPageVerifyRefusedNamesFields: where MaxText cannot run the plan,
// the page said why in export's plain words; it names the options by the
// form's labels, as its other errors do.
func TestPageVerifyRefusedNamesFields(t *testing.T) {
	v := verifySection(t, "/?model=llama3-8b&tpu=v5p-8&slices=2&mesh="+url.QueryEscape("fsdp=4,pipeline=2(dcn)")+"&global_batch=32&schedule=1f1b")
	if want := "pass " + label(plan.OptionSchedule) + " gpipe"; !strings.Contains(v, "MaxText cannot compile this plan as it is") || !strings.Contains(v, want) {
		t.Errorf("verify steps where MaxText refuses the schedule, want %q:\n%s", want, v)
	}
}

// TestPageVerifyAccumulation: gemma2-27b on v6e-64 at 256 sequences plans
// fsdp=64 with 4 micro-batches, and the page's download says
// gradient_accumulation_steps: 4; its export and check commands gave the
// layout alone, which plan costs as one pass (46.7 GiB over HBM). They
// now give the steps, and the form asked that layout with those steps
// downloads the same config.
func TestPageVerifyAccumulation(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.GlobalBatch = "gemma2-27b", "v6e-64", "256"
	v := verifySection(t, "/?"+queryOf(o))
	_, yml := get(t, New(testConfig), "/download/maxtext.yaml?"+queryOf(o))
	if !strings.Contains(yml, "\ngradient_accumulation_steps: 4\n") {
		t.Fatalf("the download does not accumulate 4 micro-batches:\n%s", yml)
	}
	for _, cmd := range []string{"shardlab export maxtext ", "shardlab check "} {
		i := strings.Index(v, cmd)
		if line, _, _ := strings.Cut(v[max(i, 0):], "\n"); i < 0 || !strings.Contains(line, " --mesh 'fsdp=64' ") || !strings.Contains(line, " --gradient-accumulation-steps 4") {
			t.Errorf("%s line lacks the layout with --gradient-accumulation-steps 4:\n%s", cmd, v)
		}
	}
	remat := strings.Trim(strings.SplitN(yml[strings.Index(yml, "\nremat_policy:")+len("\nremat_policy:"):], "\n", 2)[0], " '")
	asked := o
	asked.Mesh, asked.Remat, asked.GradientAccumulationSteps = "fsdp=64", remat, 4
	if _, again := get(t, New(testConfig), "/download/maxtext.yaml?"+queryOf(asked)); again != yml {
		t.Errorf("the layout asked with 4 steps (remat %s) downloads another config:\n%s\nwant\n%s", remat, again, yml)
	}
}

// TestPageVerifyCalibrateAdvice: with a temporaries' scale set, the page
// told the user to plan with the calibration file "with the same flags",
// which plan refuses beside the scale; it says in place of it.
func TestPageVerifyCalibrateAdvice(t *testing.T) {
	// a plan below XLA's limit (one at it writes no calibration)
	v := verifySection(t, "/?model=llama3-8b&tpu=v5p-64&temp_scale=1.1&global_batch=32")
	if !strings.Contains(v, "with the same flags, in place of the temporaries' scale,") {
		t.Errorf("verify steps with temp_scale:\n%s", v)
	}
}

// TestPlanJSONCarriesVerify: the page shows the verify steps under the
// plan, and its plan.json download had none of them. It carries them as
// plan --json --verify does: the export and check lines the page shows,
// with the options the form changed, and the compile of the config the
// page downloads; where there is nothing to compile, why.
func TestPlanJSONCarriesVerify(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Seq, o.CausalFLOPs = "llama3-8b", "v5p-8", 4096, false
	q := queryOf(o)
	v := verifySection(t, "/?"+q)
	code, body := get(t, New(testConfig), "/download/plan.json?"+q)
	var d struct {
		Verify *export.Steps `json:"verify"`
	}
	if err := json.Unmarshal([]byte(body), &d); code != http.StatusOK || err != nil || d.Verify == nil || len(d.Verify.Commands) != 3 {
		t.Fatalf("GET /download/plan.json = %d, %v, verify %+v\n%.300s", code, err, d.Verify, body)
	}
	c := d.Verify.Commands
	for _, line := range []string{c[1].Line, c[2].Line} {
		if !strings.Contains(v, line) {
			t.Errorf("plan.json's line %q is not the page's:\n%s", line, v)
		}
	}
	if !strings.Contains(v, "The download is what <code>"+c[0].Line+"</code> writes") || !strings.Contains(c[0].Line, " --seq 4096 --causal-flops=false ") {
		t.Errorf("plan.json's export %q is not the page's, with the form's options:\n%s", c[0].Line, v)
	}
	_, body = get(t, New(testConfig), "/download/plan.json?model=gemma-2b&tpu=v3-8")
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.Verify == nil || d.Verify.Available || d.Verify.UnavailableReason != export.WhyNoCompileTopology {
		t.Errorf("v3-8's plan.json: %v, verify %+v, want why there is no compile", err, d.Verify)
	}
}
