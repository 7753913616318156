package export

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
)

func pytorchPlan(t *testing.T, modelName, tpu string, slices int, layout, batch string) plan.Plan {
	t.Helper()
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch = modelName, tpu, slices, layout, batch
	o.Framework = string(plan.FrameworkPyTorch)
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPyTorchMeshCountsTheDevices(t *testing.T) {
	// The mesh's shape multiplies to the PJRT devices of the multislice,
	// its ICI shape to a slice's and its DCN shape to the slices; 'fsdp' is
	// an axis, as FSDPv2 requires.
	for _, tt := range []struct {
		model, tpu string
		slices     int
		layout     string
		batch      string
	}{
		{"llama3-8b", "v5p-64", 1, "fsdp=32", ""},
		{"llama3-8b", "v4-32", 2, "data=2(dcn),fsdp=16", ""},
		{"llama3-8b", "v5litepod-16", 1, "data=2,fsdp=8", ""},
		{"llama3-8b", "v6e-16", 2, "fsdp=2(dcn),fsdp=8,tensor=2", ""},
		{"llama3-70b", "tpu7x-128", 2, "data=2(dcn),fsdp=32,tensor=4", "256"},
		{"llama2-7b", "v3-32", 1, "fsdp=32", "64"},
	} {
		p := pytorchPlan(t, tt.model, tt.tpu, tt.slices, tt.layout, tt.batch)
		m, err := PyTorch(p)
		if err != nil {
			t.Fatalf("%s on %s: %v", tt.layout, tt.tpu, err)
		}
		ms := p.Request.Multislice
		per := ms.Slice.Chip.JAXDevicesPerChip
		prod := func(xs []int) int {
			n := 1
			for _, x := range xs {
				n *= x
			}
			return n
		}
		if got, want := prod(m.Shape()), ms.Chips()*per; got != want || m.Devices != want {
			t.Errorf("%s on %d x %s: mesh of %d devices (Devices %d), want %d", tt.layout, tt.slices, tt.tpu, got, m.Devices, want)
		}
		if got, want := prod(m.ICI), ms.Slice.Chips()*per; got != want {
			t.Errorf("%s on %s: ici_mesh_shape %v multiplies to %d, want %d", tt.layout, tt.tpu, m.ICI, got, want)
		}
		if got := prod(m.DCN); got != ms.Slices {
			t.Errorf("%s: dcn_mesh_shape %v multiplies to %d, want %d slices", tt.layout, m.DCN, got, ms.Slices)
		}
		if strings.Join(m.Names, ",") != "data,fsdp,model" {
			t.Errorf("axis names %v", m.Names)
		}
	}
}

// refusedForPyTorch checks layout for modelName on tpu both ways: a plan
// of it searched for any framework is refused by the export with want in
// its error, and the request under plan.FrameworkPyTorch is refused by
// plan, naming the mesh option and want too (one rule:
// plan.PyTorchAxisLimit).
func refusedForPyTorch(t *testing.T, modelName, tpu, layout, want string) {
	t.Helper()
	p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Mesh, o.Remat = modelName, tpu, layout, "full" })
	if _, err := PyTorch(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s %s: export %v, want a refusal containing %q", modelName, layout, err, want)
	}
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Mesh, o.Framework = modelName, tpu, layout, string(plan.FrameworkPyTorch)
	var oe *plan.OptionError
	if _, err := plan.ParseRequest(o); !errors.As(err, &oe) || oe.Option != plan.OptionMesh || !strings.Contains(err.Error(), want) {
		t.Errorf("%s %s with framework pytorch: plan %v, want a refusal of the mesh option containing %q", modelName, layout, err, want)
	}
}

func TestPyTorchRefusesPipelineAndContext(t *testing.T) {
	for _, layout := range []string{"fsdp=16,pipeline=2", "fsdp=16,context=2"} {
		axis := strings.SplitN(strings.Split(layout, ",")[1], "=", 2)[0]
		refusedForPyTorch(t, "llama3-8b", "v5p-64", layout, axis+" 2")
	}
}

// TestPyTorchRefusesAccumulation: a plan that accumulates gradients
// (64 sequences of Llama 3 8B on v6e-8 do), searched or asked as its
// layout with plan's gradient_accumulation_steps, is refused, with the
// micro-batches, since the export writes no training loop; one that does
// not is exported.
func TestPyTorchRefusesAccumulation(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.GlobalBatch = "llama3-8b", "v6e-8", "64" })
	g := p.Best.Estimate.Job.MicroBatches
	if g < 2 || p.Best.Estimate.Mesh.Size(mesh.Pipeline) > 1 {
		t.Fatalf("%s with %d micro-batches, want gradient accumulation", p.Best.Estimate.Mesh, g)
	}
	_, err := PyTorch(p)
	if want := fmt.Sprintf("gradient accumulation %d; none:", g); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
		t.Errorf("PyTorch = %v, want a refusal containing %q", err, want)
	}
	// the same layout asked with its micro-batches given
	p = search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.GlobalBatch, o.Mesh, o.GradientAccumulationSteps = "llama3-8b", "v6e-8", "64", p.Best.Estimate.Mesh.String(), g
	})
	// and its fix names the option that asked for it (following the
	// batch advice alone, with the option still given, planned nothing)
	if _, err := PyTorch(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), fmt.Sprintf("gradient accumulation %d; none:", g)) ||
		!strings.Contains(err.Error(), "plan with gradient accumulation steps 1 (or 0) and a global batch") {
		t.Errorf("--mesh with %d steps given: PyTorch = %v, want the same refusal, naming the option", g, err)
	}
	p = search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.GlobalBatch, o.Framework = "llama3-8b", "v6e-8", "8", string(plan.FrameworkPyTorch)
	})
	if _, err := PyTorch(p); err != nil {
		t.Errorf("8 sequences, %d micro-batches: %v", p.Best.Estimate.Job.MicroBatches, err)
	}
}

// TestPyTorchTensorNeedsLlamaModules: the tensor-parallel sharding names
// a Llama-style layer's modules, so tensor parallelism is refused for
// models whose Hugging Face modules differ (experts, latent attention, an
// MLP without a gate), and kept for those that have them. The search for
// PyTorch never splits tensor for the first; a mixture of experts it
// does not search at all (the model is refused).
func TestPyTorchTensorNeedsLlamaModules(t *testing.T) {
	for _, c := range []struct {
		model, why string
		moe        bool
	}{{"mixtral-8x7b", "experts", true}, {"deepseek3-671b", "latent attention", true}, {"gpt3-175b", "no gate projection", false}, {"llama3-8b", "", false}} {
		if c.why != "" {
			refusedForPyTorch(t, c.model, "v5p-128", "fsdp=16,tensor=4", "no tensor parallelism for "+c.model)
			refusedForPyTorch(t, c.model, "v5p-128", "fsdp=16,tensor=4", c.why)
			// and the search for PyTorch never splits tensor for it
			o := plan.DefaultOptions()
			o.Model, o.TPU, o.Framework = c.model, "v5p-128", string(plan.FrameworkPyTorch)
			r, err := plan.ParseRequest(o)
			if c.moe {
				var oe *plan.OptionError
				if !errors.As(err, &oe) || oe.Option != plan.OptionModel || !strings.Contains(err.Error(), "want a dense model") {
					t.Errorf("%s searched for PyTorch: %v, want the model refused for its experts", c.model, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.Search(r)
			var none *plan.NoPlanError
			if err != nil && !errors.As(err, &none) {
				t.Fatal(err)
			}
			for _, k := range append(append([]plan.Candidate{}, p.Top...), p.Alternatives...) {
				if k.Estimate.Mesh.Size(mesh.Tensor) > 1 {
					t.Errorf("%s searched for PyTorch: %s splits tensor", c.model, k.Estimate.Mesh)
				}
			}
			continue
		}
		if _, err := PyTorch(pytorchPlan(t, c.model, "v5p-128", 1, "fsdp=16,tensor=4", "")); err != nil {
			t.Errorf("%s with tensor=4: %v, want an export", c.model, err)
		}
	}
}

// signature is a Python function's parameters: the positional ones
// (which may also be passed by keyword), the keyword-only ones, which
// of either have no default, and the others' defaults as the source
// spells them.
type signature struct {
	positional, keywordOnly []string
	required                map[string]bool
	defaults                map[string]string
}

// readSignatures reads testdata/torch-xla-api.txt (torch_xla_lists.py's
// output): name(params) a line, a default after '='.
func readSignatures(t *testing.T) map[string]signature {
	t.Helper()
	data, err := os.ReadFile("testdata/torch-xla-api.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]signature{}
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		open := strings.IndexByte(l, '(')
		if open < 0 || !strings.HasSuffix(l, ")") {
			t.Fatalf("torch-xla-api.txt: %q is not name(params)", l)
		}
		name := l[:open]
		sig := signature{required: map[string]bool{}, defaults: map[string]string{}}
		kwOnly := false
		for _, p := range callArgs(l, open) {
			if p == "*" {
				kwOnly = true
				continue
			}
			n, def, hasDefault := strings.Cut(p, "=")
			if hasDefault {
				sig.defaults[n] = def
			} else {
				sig.required[n] = true
			}
			if kwOnly {
				sig.keywordOnly = append(sig.keywordOnly, n)
			} else {
				sig.positional = append(sig.positional, n)
			}
		}
		out[name] = sig
	}
	return out
}

// callArgs splits the arguments of the call that starts at text[open]
// ('(') at its top-level commas.
func callArgs(text string, open int) []string {
	var args []string
	depth, start := 0, open+1
	for i := open; i < len(text); i++ {
		switch text[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				if a := strings.TrimSpace(text[start:i]); a != "" {
					args = append(args, a)
				}
				return args
			}
		case ',':
			if depth == 1 {
				args = append(args, strings.TrimSpace(text[start:i]))
				start = i + 1
			}
		}
	}
	return args
}

// callProblems holds every call of torch_xla's API in the Python,
// comments included, to the signatures: only names the API has, no more
// positional arguments than positional parameters, keywords the function
// takes, keyword-only parameters passed by keyword, every required one
// given. It returns what is wrong.
func callProblems(py string, sigs map[string]signature) []string {
	var out []string
	errorf := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	call := regexp.MustCompile(`\b(?:(?:xs|xr)\.[A-Za-z_]+|FSDPv2|checkpoint_module|flash_attention)\(`)
	for _, m := range call.FindAllStringIndex(py, -1) {
		name := py[m[0] : m[1]-1]
		sig, ok := sigs[name]
		if !ok {
			errorf("the export calls %s, which is not in torch_xla's API list", name)
			continue
		}
		given := map[string]bool{}
		npos := 0
		for _, a := range callArgs(py, m[1]-1) {
			k, _, isKw := strings.Cut(a, "=")
			if isKw && regexp.MustCompile(`^\s*[A-Za-z_]+\s*$`).MatchString(k) {
				k = strings.TrimSpace(k)
				if !slices.Contains(sig.positional, k) && !slices.Contains(sig.keywordOnly, k) {
					errorf("%s(..., %s=...): %s takes no such parameter", name, k, name)
				}
				given[k] = true
				continue
			}
			if npos >= len(sig.positional) {
				errorf("%s is called with %d or more positional arguments, but takes %d (%v keyword-only): %q", name, npos+1, len(sig.positional), sig.keywordOnly, a)
				continue
			}
			given[sig.positional[npos]] = true
			npos++
		}
		for p := range sig.required {
			if !given[p] {
				errorf("%s is called without its required parameter %s", name, p)
			}
		}
	}
	return out
}

// TestPyTorchPythonCallsMatchTorchXLA: every layout's Python calls
// torch_xla as its signatures at the cited commit allow (FSDPv2's mesh is
// keyword-only), FSDPv2 for FSDP, told the data axis when there is one,
// and with tensor parallelism for the parameters left unmarked, given
// the logits' sharding.
func TestPyTorchPythonCallsMatchTorchXLA(t *testing.T) {
	sigs := readSignatures(t)
	for _, tt := range []struct {
		tpu    string
		slices int
		layout string
	}{
		{"v5p-64", 1, "fsdp=32"}, {"v5p-64", 1, "data=32"}, {"v5p-64", 1, "fsdp=8,tensor=4"}, {"v5p-64", 1, "data=2,fsdp=16"},
		{"v5p-64", 2, "data=2(dcn),fsdp=32"}, {"v6e-16", 2, "fsdp=2(dcn),fsdp=8,tensor=2"},
	} {
		what := fmt.Sprintf("%s on %d x %s", tt.layout, tt.slices, tt.tpu)
		m, err := PyTorch(pytorchPlan(t, "llama3-8b", tt.tpu, tt.slices, tt.layout, ""))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := m.WritePython(&b); err != nil {
			t.Fatal(err)
		}
		py := b.String()
		for _, p := range callProblems(py, sigs) {
			t.Errorf("%s: %s", what, p)
		}
		if !strings.Contains(py, "import SpmdFullyShardedDataParallel as FSDPv2") {
			t.Errorf("%s: FSDPv2 is not the API's class", what)
		}
		shape := m.Shape()
		if want := shape[1] > 1 || shape[2] > 1; strings.Contains(py, "FSDPv2(") != want {
			t.Errorf("%s: FSDPv2 called %v, want %v (FSDP, or tensor parallelism's leftover parameters):\n%s", what, !want, want, py)
		}
		if want := shape[2] > 1; strings.Contains(py, "shard_output=shard_logits") != want {
			t.Errorf("%s: FSDPv2 given shard_logits %v, want %v (the logits' vocabulary over 'model' with tensor parallelism):\n%s", what, !want, want, py)
		}
		// FSDPv2's default shard_output raises on a Hugging Face ModelOutput
		if want := shape[1] > 1 && shape[2] == 1; strings.Contains(py, "shard_output=shard_batch_output") != want {
			t.Errorf("%s: FSDPv2 given shard_batch_output %v, want %v (the output's batch over ('data', 'fsdp') whatever the output's type):\n%s", what, !want, want, py)
		}
		if strings.Contains(py, "dimension 0 of every") {
			t.Errorf("%s: says FSDPv2 shards dimension 0; it shards each parameter's largest dimension (shard_maximal=True):\n%s", what, py)
		}
	}
}

// TestCallProblemsCatches: the signature check refuses the calls it is there
// to refuse, FSDPv2's mesh passed by position first.
func TestCallProblemsCatches(t *testing.T) {
	sigs := readSignatures(t)
	for _, py := range []string{
		"model = FSDPv2(model, mesh)",
		"xs.HybridMesh((4, 2), (2, 1), ('data', 'fsdp'))",
		"xs.Mesh(np.arange(8))",
		"xs.mark_sharding(w, mesh, ('fsdp', None), extra=1)",
		"xs.shard(w)",
		"flash_attention(q, k, v, True, None, None, 0.1, None)", // ab is keyword-only
		"flash_attention(q, k, v, causal=True, scale=0.1)",
	} {
		if len(callProblems(py, sigs)) == 0 {
			t.Errorf("callProblems(%q) found nothing wrong", py)
		}
	}
	good := "m = FSDPv2(model, mesh=mesh, extra_data_axis='data'); xs.Mesh(np.arange(8), (2, 4), ('data', 'fsdp'))"
	if p := callProblems(good, sigs); len(p) > 0 {
		t.Errorf("callProblems(%q) = %q, want none", good, p)
	}
}

// hfParam is one parameter of a Hugging Face LlamaForCausalLM: its name
// as named_parameters gives it (the layer index as {i}) and its shape.
type hfParam struct {
	name string
	dims []int
}

// llamaParams lists a Llama-style model's parameters as Hugging Face's
// modeling_llama.py builds them: embed_tokens [vocab, d], each layer's
// q/k/v/o and gate/up/down projections ([out, in]) and its two RMSNorm
// weights, the final norm and, untied, lm_head [vocab, d].
func llamaParams(t *testing.T, s model.Spec) []hfParam {
	t.Helper()
	d, v, f := s.DModel, s.Vocab, s.DFF
	q, kv := s.Heads*s.Head(), s.KV()*s.Head()
	l := "model.layers.{i}."
	ps := []hfParam{{"model.embed_tokens.weight", []int{v, d}},
		{l + "self_attn.q_proj.weight", []int{q, d}}, {l + "self_attn.k_proj.weight", []int{kv, d}},
		{l + "self_attn.v_proj.weight", []int{kv, d}}, {l + "self_attn.o_proj.weight", []int{d, q}},
		{l + "mlp.gate_proj.weight", []int{f, d}}, {l + "mlp.up_proj.weight", []int{f, d}}, {l + "mlp.down_proj.weight", []int{d, f}},
		{l + "input_layernorm.weight", []int{d}}, {l + "post_attention_layernorm.weight", []int{d}},
		{"model.norm.weight", []int{d}}}
	if !s.TiedEmbeddings {
		ps = append(ps, hfParam{"lm_head.weight", []int{v, d}})
	}
	var n int64
	for _, p := range ps {
		size := int64(1)
		for _, x := range p.dims {
			size *= int64(x)
		}
		if strings.Contains(p.name, "{i}") {
			size *= int64(s.Layers)
		}
		n += size
	}
	if want := s.ParamCount().Total(); n != want {
		t.Fatalf("%s: the Hugging Face parameters add up to %d, the model's count is %d", s.Name, n, want)
	}
	return ps
}

// scriptSharding reads the generated Python: the partition spec each
// parameter is marked with (by name, the layer's as model.layers.{i}.…,
// and only when wrap_model runs shard_decoder_layer on every layer), and
// whether wrap_model wraps the model in FSDPv2, which shards the rest.
func scriptSharding(py string) (specs map[string][]string, fsdpv2 bool) {
	specs = map[string][]string{}
	_, wrap, _ := strings.Cut(py, "def wrap_model(model):")
	spec := func(s string) []string { // ('model', 'fsdp') -> [model fsdp]
		var out []string
		for _, a := range regexp.MustCompile(`'[a-z]+'|None|\(\(.*?\)`).FindAllString(strings.TrimSpace(s)[1:], -1) {
			out = append(out, strings.NewReplacer("'", "", "(", "", ")", "", " ", "").Replace(a))
		}
		return out
	}
	if regexp.MustCompile(`for layer in model\.model\.layers:\n\s+shard_decoder_layer\(layer\)`).MatchString(wrap) {
		for _, m := range regexp.MustCompile(`for w in \(([^)]*)\):\n\s+xs\.mark_sharding\(w, mesh, (\(.*\))\)`).FindAllStringSubmatch(py, -1) {
			for _, w := range strings.Split(m[1], ",") {
				specs["model.layers.{i}."+strings.TrimPrefix(strings.TrimSpace(w), "layer.")] = spec(m[2])
			}
		}
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+) = model\.([\w.]+)$`).FindAllStringSubmatch(wrap, -1) {
		vars[m[1]] = m[2]
	}
	for _, m := range regexp.MustCompile(`xs\.mark_sharding\(([\w.]+), mesh, (\(.*\))\)`).FindAllStringSubmatch(wrap, -1) {
		name, ok := vars[m[1]]
		if !ok {
			name = strings.TrimPrefix(m[1], "model.")
		}
		specs[name] = spec(m[2])
	}
	return specs, regexp.MustCompile(`return FSDPv2\(remat\(model\),`).MatchString(wrap)
}

// TestPyTorchShardsEveryParameter: with tensor parallelism the script
// shards every parameter of the model (Hugging Face's list, checked to
// add up to the model's count): the decoder layers' and the embedding's
// and output layer's by hand over 'model' and 'fsdp', the norms by
// FSDPv2 over 'fsdp'; and a device holds the parameters the plan costs a
// chip (within 0.1%: the norms, which cost splits over tensor too).
// Before, embed_tokens and lm_head were left whole on every device.
func TestPyTorchShardsEveryParameter(t *testing.T) {
	for _, tt := range []struct{ model, tpu, layout string }{
		{"llama3-70b", "v5p-64", "fsdp=8,tensor=4"}, {"llama3-8b", "v5p-64", "data=2,fsdp=4,tensor=4"}, {"gemma-7b", "v5p-32", "fsdp=4,tensor=4"},
	} {
		p := pytorchPlan(t, tt.model, tt.tpu, 1, tt.layout, "")
		m, err := PyTorch(p)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := m.WritePython(&b); err != nil {
			t.Fatal(err)
		}
		specs, fsdpv2 := scriptSharding(b.String())
		size := map[string]int{"None": 1}
		for i, n := range m.Names {
			size[n] = m.Shape()[i]
		}
		e := p.Best.Estimate
		var perDevice float64
		for _, par := range llamaParams(t, e.Job.Model) {
			n := float64(e.Job.Model.Layers)
			if !strings.Contains(par.name, "{i}") {
				n = 1
			}
			split := 1
			sp, marked := specs[par.name]
			switch {
			case marked && len(sp) != len(par.dims):
				t.Errorf("%s %s: %s marked %v, a spec for %d dimensions", tt.model, tt.layout, par.name, sp, len(par.dims))
			case marked:
				for _, axes := range sp {
					for _, a := range strings.Split(axes, ",") {
						split *= size[a]
					}
				}
			case fsdpv2:
				split = size["fsdp"] // FSDPv2: over 'fsdp', on the largest dimension
			default:
				t.Errorf("%s %s: %s is left replicated", tt.model, tt.layout, par.name)
			}
			if len(par.dims) == 2 && !slices.Contains(sp, "model") {
				t.Errorf("%s %s: %s marked %v, not over 'model' as the plan costs it", tt.model, tt.layout, par.name, sp)
			}
			for _, x := range par.dims {
				n *= float64(x)
			}
			perDevice += n / float64(split)
		}
		costed := float64(e.Memory.Optimizer) / float64(e.Job.Precision.Optimizer) / float64(p.Request.Multislice.Slice.Chip.JAXDevicesPerChip)
		if math.Abs(perDevice/costed-1) > 1e-3 {
			t.Errorf("%s %s: the script leaves %.4g parameters a device, the plan costs %.4g", tt.model, tt.layout, perDevice, costed)
		}
		if strings.Contains(b.String(), "FSDPv2 is not used") {
			t.Errorf("%s %s: still says FSDPv2 is not used", tt.model, tt.layout)
		}
	}
}

// TestPyTorchPythonParses: every layout's script is Python that parses
// (python3's ast module; skipped without python3).
func TestPyTorchPythonParses(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	for _, layout := range []string{"fsdp=32", "data=32", "data=2,fsdp=16", "fsdp=8,tensor=4", "data=8,tensor=4"} {
		m, err := PyTorch(pytorchPlan(t, "llama3-8b", "v5p-64", 1, layout, ""))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := m.WritePython(&b); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-c", "import ast, sys; ast.parse(sys.stdin.read())")
		cmd.Stdin = strings.NewReader(b.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: the script does not parse: %v\n%s\n%s", layout, err, out, b.String())
		}
	}
}

// TestPyTorchShardsAnyOutput runs the FSDP script's shard_batch_output in
// python3 (skipped without it) on the three outputs a model's forward
// gives, with xs.mark_sharding recorded: a Hugging Face ModelOutput (an
// OrderedDict with logits, on which FSDPv2's own default raises
// RuntimeError), a tuple and a tensor. Each has its batch over ('data',
// 'fsdp') and the rest unsharded, one entry a dimension.
func TestPyTorchShardsAnyOutput(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	m, err := PyTorch(pytorchPlan(t, "llama3-8b", "v5p-64", 1, "data=2,fsdp=16", ""))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := m.WritePython(&b); err != nil {
		t.Fatal(err)
	}
	_, fn, ok := strings.Cut(b.String(), "def shard_batch_output(")
	fn, _, _ = strings.Cut(fn, "\n\n")
	if !ok {
		t.Fatalf("no shard_batch_output in the FSDP script:\n%s", b.String())
	}
	script := `import collections
marked = []
class xs:
    @staticmethod
    def mark_sharding(t, mesh, spec): marked.append((t.name, spec))
class T:
    def __init__(self, name, n): self.name, self.n = name, n
    def dim(self): return self.n
class ModelOutput(collections.OrderedDict):
    def __init__(self, logits): super().__init__(logits=logits); self.logits = logits
def shard_batch_output(` + fn + `
for out in (ModelOutput(T('logits', 3)), (T('first', 3), T('second', 2)), T('tensor', 2)):
    shard_batch_output(out, None)
print(marked)
`
	out, err := exec.Command(py, "-c", script).CombinedOutput()
	want := "[('logits', (('data', 'fsdp'), None, None)), ('first', (('data', 'fsdp'), None, None)), ('tensor', (('data', 'fsdp'), None))]\n"
	if err != nil || string(out) != want {
		t.Errorf("shard_batch_output: %v\n%s\nwant %s", err, out, want)
	}
}

// TestPyTorchHeaderClaimsNoBand is review 140's finding 3 for the export:
// the header repeats the plan's MFU and says the efficiency behind it is
// MaxText's (plan.PyTorchEfficiency, plan's words) and that it carries no
// error band; it claims no band, and with an efficiency the user gave it
// claims nothing of MaxText's.
func TestPyTorchHeaderClaimsNoBand(t *testing.T) {
	p := pytorchPlan(t, "llama3-8b", "v5p-64", 1, "", "")
	m, err := PyTorch(p)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(m.Comments, "\n")
	if !strings.Contains(head, "residual efficiency "+plan.PyTorchEfficiency+"; no error band") || strings.Contains(head, "80 %") || strings.Contains(head, "in the band") {
		t.Errorf("header does not say the efficiency is MaxText's and that it has no band, or claims a band:\n%s", head)
	}
	p.Request.Efficiency = 0.5
	if m, err = PyTorch(p); err != nil || strings.Contains(strings.Join(m.Comments, "\n"), plan.PyTorchEfficiency) {
		t.Errorf("with the efficiency option set the header still names MaxText's efficiency (%v):\n%s", err, strings.Join(m.Comments, "\n"))
	}
}
