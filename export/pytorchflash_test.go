package export

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"shardlab/plan"
)

// pytorchPython is the script of the PyTorch plan for modelName on tpu
// with layout, its attention as given ("" for the default).
func pytorchPython(t *testing.T, modelName, tpu, layout, attention string) string {
	t.Helper()
	return pytorchScript(t, search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.Framework = modelName, tpu, layout, string(plan.FrameworkPyTorch)
		if attention != "" {
			o.Attention = attention
		}
	}))
}

// kernelCall is the arguments of the one call of flash_attention in py,
// positional and by keyword.
func kernelCall(t *testing.T, py string) (positional []string, kw map[string]string) {
	t.Helper()
	calls := regexp.MustCompile(`\bflash_attention\(`).FindAllStringIndex(py, -1)
	if len(calls) != 1 {
		t.Fatalf("%d calls of flash_attention, want 1:\n%s", len(calls), py)
	}
	kw = map[string]string{}
	for _, a := range callArgs(py, calls[0][1]-1) {
		if k, v, ok := strings.Cut(a, "="); ok && regexp.MustCompile(`^\w+$`).MatchString(k) {
			kw[k] = v
		} else {
			positional = append(positional, a)
		}
	}
	return positional, kw
}

// TestPyTorchFlashCallMatchesTheKernel holds the script's flash call to
// torch_xla's flash_attention as testdata/torch-xla-api.txt records it
// (torch_xla_lists.py from custom_kernel.py 854 @41398bff). First the
// facts the call rests on, read from that list: sm_scale defaults to 1.0,
// no scale, and partition_spec and mesh to None, which runs the kernel on
// the global tensors (fa_custom_forward takes _shard_map only with a
// spec). Then the call: q, k and v by position, causal, sm_scale given
// (the model's scale, not the default), the spec of q's four dimensions
// with the batch over ('data', 'fsdp') and the heads over 'model' exactly
// when the layout splits tensor, and the mesh. A dot-product plan calls
// no kernel. Before, the script wrote flash_attention(q, k, v,
// causal=True): scores √128 too large, and unsharded (review 152 #1).
func TestPyTorchFlashCallMatchesTheKernel(t *testing.T) {
	fa, ok := readSignatures(t)["flash_attention"]
	if !ok {
		t.Fatal("torch-xla-api.txt has no flash_attention")
	}
	if !slices.Equal(fa.positional[:3], []string{"q", "k", "v"}) || fa.defaults["sm_scale"] != "1.0" || fa.defaults["causal"] != "False" {
		t.Fatalf("flash_attention %+v: the call below was written for (q, k, v, causal=False, ..., sm_scale=1.0)", fa)
	}
	for _, p := range []string{"partition_spec", "mesh"} {
		if !slices.Contains(fa.keywordOnly, p) || fa.defaults[p] != "None" {
			t.Fatalf("flash_attention %+v: the call below was written for a keyword-only %s=None", fa, p)
		}
	}
	for _, c := range []struct {
		model, tpu, layout, heads string
	}{
		{"llama3-8b", "v6e-8", "fsdp=8", "None"},
		{"llama3-8b", "v5p-64", "data=32", "None"},
		{"llama3-8b", "v5p-64", "fsdp=8,tensor=4", "'model'"},
		{"gemma-7b", "v5p-32", "data=2,fsdp=4,tensor=2", "'model'"},
	} {
		what := c.model + " " + c.layout
		py := pytorchPython(t, c.model, c.tpu, c.layout, "")
		pos, kw := kernelCall(t, py)
		if !slices.Equal(pos, []string{"query", "key", "value"}) {
			t.Errorf("%s: flash_attention given %v by position, want query, key, value", what, pos)
		}
		if kw["causal"] != "True" {
			t.Errorf("%s: causal=%q, want True", what, kw["causal"])
		}
		if s, given := kw["sm_scale"]; !given || s == fa.defaults["sm_scale"] {
			t.Errorf("%s: sm_scale %q (given %v): the kernel's default %s does not scale the scores", what, s, given, fa.defaults["sm_scale"])
		}
		if want := "(('data', 'fsdp'), " + c.heads + ", None, None)"; kw["partition_spec"] != want {
			t.Errorf("%s: partition_spec=%s, want %s", what, kw["partition_spec"], want)
		}
		if kw["mesh"] != "mesh" {
			t.Errorf("%s: mesh=%q, want the script's mesh", what, kw["mesh"])
		}
		if !strings.Contains(py, "AttentionInterface.register(ATTENTION, xla_flash_attention)") {
			t.Errorf("%s: the kernel is not registered as a Hugging Face attention function:\n%s", what, py)
		}
	}
	py := pytorchPython(t, "llama3-8b", "v6e-8", "fsdp=8", "dot_product")
	if strings.Contains(py, "flash_attention(") || strings.Contains(py, "AttentionInterface") {
		t.Errorf("a dot-product plan's script calls the flash kernel:\n%s", py)
	}
}

// pythonFunc is the Python function name of py, from its def to the
// first blank line.
func pythonFunc(t *testing.T, py, name string) string {
	t.Helper()
	i := strings.Index(py, "def "+name+"(")
	if i < 0 {
		t.Fatalf("no %s in the script:\n%s", name, py)
	}
	fn, _, _ := strings.Cut(py[i:], "\n\n")
	return fn
}

// runPython runs script in python3, skipping without it.
func runPython(t *testing.T, script string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	out, err := exec.Command(py, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s\n%s", err, out, script)
	}
	return string(out)
}

// TestPyTorchFlashAttentionRuns runs the script's attention function in
// python3 against a stand-in kernel with flash_attention's signature as
// torch-xla-api.txt records it (a keyword it does not take raises) that
// asserts what the kernel needs, q, k and v of one shape, on Llama 3 8B's
// shapes: 32 query heads, 8 key and value heads of 128. Keys and values
// come repeated 4 times (Hugging Face's repeat_kv), the scale is
// 1/sqrt(128) = 0.0883883476 without the model's and the model's when
// given (Gemma's query_pre_attn_scalar), the output is [batch, seq,
// heads, head_dim] as Hugging Face's attention functions return, and a
// logit soft-cap or a window shorter than the sequence, which the kernel
// has not, is refused.
//
// The dtypes (review 159 #4): the stand-in kernel, as torch_xla's
// (custom_kernel.py 343-344 @41398bff), casts nothing and gives its
// output q's dtype, and torch stands in with autocast's two calls. Under
// autocast at bfloat16 the query and key come float32 beside a bfloat16
// value, as Hugging Face's rotary embedding leaves them (cos and sin in
// the float32 embeddings' dtype, modeling_llama.py @5dd4a635): the kernel
// must get all three at bfloat16 and the output come back so. Without
// autocast they go in at the value's dtype: bfloat16 for a bfloat16 model,
// float32 for a float32 one (no cast the model did not ask). Without the
// cast the first calls record float32 q and k.
func TestPyTorchFlashAttentionRuns(t *testing.T) {
	fa := readSignatures(t)["flash_attention"]
	var params []string
	for _, p := range fa.positional {
		params = append(params, p+map[bool]string{true: "=" + fa.defaults[p]}[fa.defaults[p] != ""])
	}
	params = append(params, "*")
	for _, p := range fa.keywordOnly {
		params = append(params, p+"="+fa.defaults[p])
	}
	py := pytorchPython(t, "llama3-8b", "v5p-64", "fsdp=8,tensor=4", "")
	if !regexp.MustCompile(`(?m)^import torch$`).MatchString(py) {
		t.Errorf("the attention function asks torch for autocast's dtype, but the script does not import torch:\n%s", py)
	}
	script := `import math
calls, mesh = [], 'MESH'
class torch:
    autocast = None  # the dtype of torch.autocast('xla', dtype=...), None outside one
    @staticmethod
    def is_autocast_enabled(device_type): assert device_type == 'xla'; return torch.autocast is not None
    @staticmethod
    def get_autocast_dtype(device_type): assert device_type == 'xla'; return torch.autocast
class T:
    def __init__(self, shape, name, dtype): self.shape, self.name, self.dtype = tuple(shape), name, dtype
    def repeat_interleave(self, n, dim):
        s = list(self.shape); s[dim] *= n; return T(s, '%s*%d' % (self.name, n), self.dtype)
    def transpose(self, a, b):
        s = list(self.shape); s[a], s[b] = s[b], s[a]; return T(s, self.name + '^T', self.dtype)
    def to(self, dtype): return T(self.shape, self.name, dtype)
def flash_attention(` + strings.Join(params, ", ") + `):
    assert q.shape == k.shape == v.shape, (q.shape, k.shape, v.shape)
    calls.append((k.name, v.name, causal, '%.10f' % sm_scale, partition_spec, mesh, (q.dtype, k.dtype, v.dtype)))
    return T(q.shape, 'o', q.dtype)  # custom_kernel.py 343-344: the output's dtype is q's
` + pythonFunc(t, py, "xla_flash_attention") + `
def qkv(qk, v):
    return T((2, 32, 16, 128), 'q', qk), T((2, 8, 16, 128), 'k', qk), T((2, 8, 16, 128), 'v', v)
torch.autocast = 'bfloat16'
q, k, v = qkv('float32', 'bfloat16')
out, weights = xla_flash_attention(None, q, k, v, None, dropout=0.0)
print(out.shape, out.dtype, weights)
xla_flash_attention(None, q, k, v, None, scaling=0.0625, sliding_window=None, softcap=None)
xla_flash_attention(None, q, k, v, None, sliding_window=16)
for kw in ({'softcap': 50.0}, {'sliding_window': 8}):
    try:
        xla_flash_attention(None, q, k, v, None, **kw); print('ran', kw)
    except ValueError: print('refused', kw)
torch.autocast = None
for dtype in ('bfloat16', 'float32'):
    print(xla_flash_attention(None, *qkv(dtype, dtype), None)[0].dtype)
for c in calls: print(c)
`
	spec := "(('data', 'fsdp'), 'model', None, None)"
	want := fmt.Sprintf(`(2, 16, 32, 128) bfloat16 None
refused {'softcap': 50.0}
refused {'sliding_window': 8}
bfloat16
float32
('k*4', 'v*4', True, '%.10f', %s, 'MESH', ('bfloat16', 'bfloat16', 'bfloat16'))
('k*4', 'v*4', True, '0.0625000000', %[2]s, 'MESH', ('bfloat16', 'bfloat16', 'bfloat16'))
('k*4', 'v*4', True, '%.10[1]f', %[2]s, 'MESH', ('bfloat16', 'bfloat16', 'bfloat16'))
('k*4', 'v*4', True, '%.10[1]f', %[2]s, 'MESH', ('bfloat16', 'bfloat16', 'bfloat16'))
('k*4', 'v*4', True, '%.10[1]f', %[2]s, 'MESH', ('float32', 'float32', 'float32'))
`, 1/math.Sqrt(128), spec)
	if got := runPython(t, script); got != want {
		t.Errorf("xla_flash_attention:\n%s\nwant\n%s", got, want)
	}
}

// TestPyTorchPinsTheResidualStream: with tensor parallelism the plan
// holds each decoder layer's input split over 'model' on d_model
// (MaxText's activation_embed -> tensor, cost.Job.backwardWidths), so the
// script pins it there: shard_decoder_layer, which wrap_model runs on
// every layer, registers shard_residual as a forward pre-hook with
// kwargs, and shard_residual (run in python3 with xs stood in) marks the
// hidden states, passed by position or by keyword, with their gradient,
// batch over ('data', 'fsdp'), d_model over 'model', and hands the rest
// of the forward's arguments on unchanged. Without tensor parallelism
// nothing is pinned (d_model is whole, as costed).
func TestPyTorchPinsTheResidualStream(t *testing.T) {
	py := pytorchPython(t, "llama3-70b", "v5p-128", "fsdp=16,tensor=4", "")
	layer := pythonFunc(t, py, "shard_decoder_layer")
	if !strings.Contains(layer, "\n    layer.register_forward_pre_hook(shard_residual, with_kwargs=True)") {
		t.Errorf("shard_decoder_layer does not pin the layer's input:\n%s", layer)
	}
	script := `marked = []
class xs:
    @staticmethod
    def mark_sharding_with_gradients(t, mesh, spec): marked.append((t, mesh, spec)); return 'pinned ' + t
mesh = 'MESH'
` + pythonFunc(t, py, "shard_residual") + `
print(shard_residual(None, ('h', 'mask'), {'position_ids': 'p'}))
print(shard_residual(None, (), {'hidden_states': 'h', 'position_ids': 'p'}))
print(marked)
`
	want := `(('pinned h', 'mask'), {'position_ids': 'p'})
((), {'hidden_states': 'pinned h', 'position_ids': 'p'})
[('h', 'MESH', (('data', 'fsdp'), None, 'model')), ('h', 'MESH', (('data', 'fsdp'), None, 'model'))]
`
	if got := runPython(t, script); got != want {
		t.Errorf("shard_residual:\n%s\nwant\n%s", got, want)
	}
	if py := pytorchPython(t, "llama3-8b", "v5p-64", "fsdp=32", ""); strings.Contains(py, "shard_residual") {
		t.Errorf("fsdp=32 pins a residual stream it does not split:\n%s", py)
	}
}

// TestPyTorchRefusesMixturesOfExperts (review 152 #6): under the PyTorch
// framework a mixture of experts is refused when the options are read,
// naming the model option, the experts and what is accepted, and a plan
// of one searched for any framework, on a layout the export otherwise
// writes (fsdp, no expert axis), is refused by the export: the plan costs
// MaxText's grouped GEMM, which the script's Hugging Face model does not
// run.
func TestPyTorchRefusesMixturesOfExperts(t *testing.T) {
	for _, c := range []struct{ model, experts string }{{"mixtral-8x7b", "experts 8"}, {"qwen3-235b-a22b", "experts 128"}} {
		o := plan.DefaultOptions()
		o.Model, o.TPU, o.Framework = c.model, "v5p-128", string(plan.FrameworkPyTorch)
		var oe *plan.OptionError
		_, err := plan.ParseRequest(o)
		if !errors.As(err, &oe) || oe.Option != plan.OptionModel || !strings.Contains(err.Error(), "("+c.experts+") with framework pytorch, want a dense model") {
			t.Errorf("%s with framework pytorch: %v, want the model option refused for its %s", c.model, err, c.experts)
		}
	}
	p := search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch = "mixtral-8x7b", "v5p-64", "fsdp=32", "64"
	})
	if _, err := PyTorch(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "experts 8; a dense model") || !strings.Contains(err.Error(), "custom_kernel.gmm") {
		t.Errorf("export of mixtral-8x7b at fsdp=32: %v, want a refusal of its experts", err)
	}
}

// TestPyTorchRefusesFlashOverWindows: torch_xla's flash_attention has no
// sliding window, so a plan of a model with sliding-window layers (Gemma
// 2 9B: every other layer over the last 4096 tokens) costed with flash
// attention is refused by the export, naming the attention and what to
// plan with; with dot-product attention (Hugging Face's eager path,
// which applies the window) it is written, with no flash call.
func TestPyTorchRefusesFlashOverWindows(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Mesh, o.Remat = "gemma2-9b", "v5p-64", "fsdp=32", "full" })
	if _, err := PyTorch(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "attention flash; dot_product for gemma2-9b: its sliding-window layers attend over the last 4096 tokens") {
		t.Errorf("export of gemma2-9b with flash attention: %v, want a refusal of the attention", err)
	}
	py := pytorchPython(t, "gemma2-9b", "v5p-64", "fsdp=32", "dot_product")
	if strings.Contains(py, "flash_attention(") || !strings.Contains(py, "# Attention: dot-product") {
		t.Errorf("gemma2-9b with dot_product attention: want the eager attention, no flash call:\n%s", py)
	}
}
