package export

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
)

// readList reads a testdata list: a header line naming its source and
// commit, then one name a line.
func readList(t *testing.T, name string) map[string]bool {
	return readListOf(t, name, 10)
}

// readListOf reads a list of at least min names.
func readListOf(t *testing.T, name string, min int) map[string]bool {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "# AI-Hypercomputer/") || !strings.Contains(sc.Text(), "@") {
		t.Fatalf("%s: first line %q names no source and commit", name, sc.Text())
	}
	out := map[string]bool{}
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out[l] = true
		}
	}
	if len(out) < min {
		t.Fatalf("%s: only %d names", name, len(out))
	}
	return out
}

// readConfigs reads testdata/maxtext-model-configs.txt: each MaxText
// model config's keys and values (JSON), and base.yml's under "base.yml".
func readConfigs(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for row := range readListOf(t, "testdata/maxtext-model-configs.txt", 50) {
		name, rest, _ := strings.Cut(row, " ")
		kv := map[string]any{}
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			var x any
			if err := json.Unmarshal([]byte(v), &x); err != nil {
				t.Fatalf("maxtext-model-configs.txt: %s: %s=%s: %v", name, k, v, err)
			}
			kv[k] = x
		}
		out[name] = kv
	}
	return out
}

// configValue is key's value in MaxText's config of model, base.yml's if
// the config does not set it.
func configValue(cfgs map[string]map[string]any, model, key string) any {
	if v, ok := cfgs[model][key]; ok {
		return v
	}
	return cfgs["base.yml"][key]
}

// blockConfigs are, for each decoder block the export writes a spec on,
// MaxText's configs of that block whose keys a spec written on it must
// cover (configs/models/*.yml @e591f30c): all of the llama2 and mixtral
// blocks'; of the deepseek block's, those without the sparse-attention
// indexer (deepseek3.2-671b) or Engram and mHC (deepseek-custom), which
// are other architectures, and without the test configs.
var blockConfigs = map[string][]string{
	"llama2": {"llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "llama3.1-8b", "llama3.1-70b",
		"llama3.1-405b", "llama3.3-70b"},
	"mixtral":  {"mixtral-8x7b", "mixtral-8x22b"},
	"deepseek": {"deepseek2-16b", "deepseek2-236b", "deepseek3-671b", "kimi-k2-1t"},
}

// MaxText's allowed values, read in the MaxText mirror at e591f30c.
var (
	// base.yml lines 355-356 (the policies decoders.py's get_remat_policy
	// knows; remat_policy is a free string in types.py).
	allowedRemat = []string{"minimal_with_context", "minimal", "save_dot_with_context_except_mlp", "save_dot_except_mlpwi",
		"save_dot_except_mlp", "save_qkv_proj", "qkv_proj_offloaded", "custom", "minimal_offloaded", "save_out_proj", "full"}
	// types.py QuantizationType
	allowedQuant = []string{"", "fp4", "int4", "int8", "intmp", "fp8_e5m2", "fp8_e4m3", "fp8", "nanoo_fp8", "fp8_nanoo", "fp8_gpu",
		"fp8_full", "te_fp8_delayedscaling", "te_fp8_currentscaling", "te_mxfp8", "te_nvfp4", "te_nvfp4_no_rht"}
	allowedDType = []string{"bfloat16", "float32", "float16"}                         // types.py DType
	allowedAttn  = []string{"autoselected", "dot_product", "flash", "cudnn_flash_te"} // base.yml line 392
	allowedPlace = []string{"remat", "device", "offload"}                             // types.py RematLocation
	// base.yml lines 361-383: the tensors remat_policy custom places.
	customTags = []string{"decoder_layer_input", "qkv_proj", "query_proj", "key_proj", "value_proj", "context", "out_proj", "mlpwi", "mlpwi_0", "mlpwi_1", "mlpwo"}
)

// devicesPerSlice is what JAX reports on a slice, read from MaxText's own
// table (src/maxtext/utils/accelerator_to_spec_map.py @e591f30c,
// devices_per_slice) and, for v2 and v3, which MaxText's table leaves
// out, from JAX's TPU info (each TensorCore is a device: v3-32 is 32): a
// second source for hw's JAXDevicesPerChip.
var devicesPerSlice = map[string]int{
	"v2-32": 32, "v3-32": 32,
	"v4-16": 8, "v4-32": 16, "v5p-16": 8, "v5p-32": 16, "v5p-128": 64, // megacore: one device per chip
	"v5litepod-16": 16, "v6e-16": 16, "v6e-256": 256,
	"tpu7x-16": 16, "tpu7x-32": 32, "tpu7x-128": 128, "tpu7x-8": 8, // "tpu7x-128": tpu7x:4x4x4, 128 devices
}

func TestDevicesPerSliceIsMaxText(t *testing.T) {
	for accel, want := range devicesPerSlice {
		s, err := hw.ParseAcceleratorType(accel)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Chips() * s.Chip.JAXDevicesPerChip; got != want {
			t.Errorf("%s: %d chips x %d JAX devices per chip = %d, MaxText's table says %d", accel, s.Chips(), s.Chip.JAXDevicesPerChip, got, want)
		}
	}
}

// checkMaxText holds a config to the rules MaxText applies when it loads
// one (types.py, maxtext_utils.create_device_mesh at e591f30c) and to what
// the plan costed. It is over 80 lines because it is one list of those
// rules, each a few lines, checked in the order MaxText checks them.
func checkMaxText(t *testing.T, name string, p plan.Plan, c MaxTextConfig) {
	t.Helper()
	keys := readList(t, "testdata/maxtext-base-keys.txt")
	schema := readList(t, "testdata/maxtext-schema-keys.txt")
	ms := p.Request.Multislice
	e := p.Best.Estimate
	if !e.Memory.Fits() {
		t.Errorf("%s: the case does not fit in HBM; nothing would be exported", name)
	}
	perChip := ms.Slice.Chip.JAXDevicesPerChip
	devices := ms.Slice.Chips() * perChip
	vals := map[string]any{}
	for _, s := range c.Settings {
		if !schema[s.Key] {
			t.Errorf("%s: key %q is not a field of MaxText's config (types.py MaxTextConfig, extra=forbid)", name, s.Key)
		}
		if _, dup := vals[s.Key]; dup {
			t.Errorf("%s: key %q written twice", name, s.Key)
		}
		vals[s.Key] = s.Value
	}
	num := func(k string) int {
		t.Helper()
		v, ok := vals[k].(int)
		if !ok {
			t.Errorf("%s: %s = %#v, want an int", name, k, vals[k])
		}
		return v
	}
	oneOf := func(k string, allowed []string) {
		t.Helper()
		if v, ok := vals[k].(string); !ok || !slices.Contains(allowed, v) {
			t.Errorf("%s: %s = %#v, want one of %q", name, k, vals[k], allowed)
		}
	}
	// mesh: every parallelism key of base.yml is written (none left at
	// its -1 placeholder); ici multiplies to the devices of a slice, dcn to
	// the slices (max_utils.fill_unspecified_mesh_axes)
	ici, dcn := 1, 1
	for k := range keys {
		if !strings.HasSuffix(k, "_parallelism") || !strings.HasPrefix(k, "ici_") && !strings.HasPrefix(k, "dcn_") {
			continue
		}
		if _, ok := vals[k]; !ok {
			t.Errorf("%s: %s not written: base.yml's value would stand", name, k)
			continue
		}
		v := num(k)
		if v < 1 {
			t.Errorf("%s: %s = %d, want at least 1", name, k, v)
		}
		if strings.HasPrefix(k, "ici_") {
			ici *= v
		} else {
			dcn *= v
		}
	}
	if ici != devices {
		t.Errorf("%s: ici_* multiply to %d, want the %d JAX devices of a slice", name, ici, devices)
	}
	if dcn != ms.Slices || num("num_slices") != ms.Slices {
		t.Errorf("%s: dcn_* multiply to %d and num_slices = %d, want %d slices", name, dcn, num("num_slices"), ms.Slices)
	}
	// what is written is what was costed: each axis as planned, one of
	// fsdp or context times the devices of a chip
	inChip := 0
	for _, a := range []struct {
		axis mesh.Axis
		key  string
	}{{mesh.Data, "data"}, {mesh.FSDP, "fsdp"}, {mesh.Tensor, "tensor"}, {mesh.Pipeline, "pipeline"}, {mesh.Context, "context"}} {
		ax := e.Mesh.Degree(a.axis)
		gi, gd := num("ici_"+a.key+"_parallelism"), num("dcn_"+a.key+"_parallelism")
		if gd != ax.DCN {
			t.Errorf("%s: dcn_%s_parallelism = %d, the plan has %d", name, a.key, gd, ax.DCN)
		}
		switch {
		case gi == ax.ICI:
		case gi == ax.ICI*perChip && (a.key == "fsdp" || a.key == "context"):
			inChip++
		default:
			t.Errorf("%s: ici_%s_parallelism = %d, the plan has %d", name, a.key, gi, ax.ICI)
		}
	}
	if want := min(perChip-1, 1); inChip != want {
		t.Errorf("%s: %d axes carry the in-chip factor, want %d", name, inChip, want)
	}
	if inChip == 1 && num("ici_fsdp_parallelism") != e.Mesh.Degree(mesh.FSDP).ICI*perChip && e.MicroBatchSize%perChip == 0 {
		t.Errorf("%s: the in-chip factor is not on fsdp though each chip's %d sequences split over its devices", name, e.MicroBatchSize)
	}
	// batch: types.py trains on int(devices x per_device_batch_size) x
	// gradient_accumulation_steps (a PositiveInt, 1 unless written; its
	// fp8 refusal is of "fp8", not the "fp8_full" export writes), accumulated over the costed micro-batches of a layout
	// without a pipeline
	steps := 1
	if _, ok := vals["gradient_accumulation_steps"]; ok {
		steps = num("gradient_accumulation_steps")
		if steps < 2 || e.Mesh.Size(mesh.Pipeline) > 1 || steps != e.Job.MicroBatches || vals["quantization"] == "fp8" {
			t.Errorf("%s: gradient_accumulation_steps %d written with %s, costed %d micro-batches, quantization %v", name, steps, e.Mesh, e.Job.MicroBatches, vals["quantization"])
		}
	} else if e.Mesh.Size(mesh.Pipeline) == 1 && e.Job.MicroBatches > 1 {
		t.Errorf("%s: %d micro-batches costed without a pipeline, no gradient_accumulation_steps written", name, e.Job.MicroBatches)
	}
	pdbs, ok := vals["per_device_batch_size"].(float64)
	if !ok || int(float64(devices*ms.Slices)*pdbs)*steps != e.Job.GlobalBatch {
		t.Errorf("%s: per_device_batch_size %v x %d devices x %d accumulated is not the costed %d sequences", name, vals["per_device_batch_size"], devices*ms.Slices, steps, e.Job.GlobalBatch)
	}
	if num("max_target_length") != e.Job.Seq {
		t.Errorf("%s: max_target_length %d, costed %d", name, num("max_target_length"), e.Job.Seq)
	}
	if tiles := num("num_vocab_tiling"); tiles < 1 || math.Mod(pdbs*float64(e.Job.Seq), float64(tiles)) != 0 {
		t.Errorf("%s: per_device_batch_size x max_target_length does not split into num_vocab_tiling %d", name, tiles)
	}
	// pipeline (types.py): stages x repeats x layers per stage = layers;
	// micro-batches a multiple of the stages that divides the batch
	stages := num("ici_pipeline_parallelism") * num("dcn_pipeline_parallelism")
	if stages > 1 {
		m, r, l := num("num_pipeline_microbatches"), num("num_pipeline_repeats"), num("num_layers_per_pipeline_stage")
		if stages*r*l != num("pipeline_parallel_layers") || num("pipeline_parallel_layers") != e.Job.Model.Layers {
			t.Errorf("%s: %d stages x %d repeats x %d layers per stage, pipeline_parallel_layers %d, model %d layers", name, stages, r, l, num("pipeline_parallel_layers"), e.Job.Model.Layers)
		}
		if m%stages != 0 || e.Job.GlobalBatch%m != 0 || m != e.Job.MicroBatches {
			t.Errorf("%s: num_pipeline_microbatches %d for %d stages, batch %d, costed %d", name, m, stages, e.Job.GlobalBatch, e.Job.MicroBatches)
		}
	} else if _, ok := vals["num_pipeline_microbatches"]; ok {
		t.Errorf("%s: num_pipeline_microbatches without a pipeline", name)
	}
	if !jaxAcceptsMesh(t, p, vals) {
		t.Errorf("%s: JAX cannot lay these ICI factors on the slice without splitting a physical axis, and allow_split_physical_axes is not true: MaxText's create_device_mesh refuses the mesh (jax mesh_utils.py _create_device_mesh_for_nd_torus)", name)
	}
	checkModel(t, name, e.Job.Model, c)
	oneOf("remat_policy", allowedRemat)
	if vals["remat_policy"] == "custom" {
		for _, tag := range customTags {
			if v, ok := vals[tag]; ok {
				oneOf(tag, allowedPlace)
				_ = v
			}
		}
		if vals["decoder_layer_input"] == "remat" {
			t.Errorf("%s: decoder_layer_input cannot be rematerialised (base.yml line 361)", name)
		}
	}
	for _, k := range []string{"dtype", "weight_dtype", "mu_dtype"} {
		oneOf(k, allowedDType)
	}
	if _, ok := vals["opt_type"]; ok {
		t.Errorf("%s: opt_type written: the plan does not choose the optimizer", name)
	}
	oneOf("attention", allowedAttn)
	checkContext(t, name, e, vals)
	if _, ok := vals["quantization"]; ok {
		oneOf("quantization", allowedQuant)
	}
	for _, k := range []string{"optimizer_memory_host_offload", "parameter_memory_host_offload"} {
		if _, ok := vals[k].(bool); !ok {
			t.Errorf("%s: %s = %#v, want a bool", name, k, vals[k])
		}
	}
	// the YAML is a drop-in config: its first line runs it, and it reads
	// base.yml first (pyconfig.py _load_config); the flags form says the
	// same
	var y, f strings.Builder
	if err := c.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(y.String(), "\n")
	if want := "# python3 -m maxtext.trainers.pre_train.train " + c.RunName + ".yml run_name=" + c.RunName; first != want || !strings.HasSuffix(c.File(), ".yml") {
		t.Errorf("%s: first line %q, want %q", name, first, want)
	}
	var firstKey string
	for _, l := range strings.Split(y.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			firstKey = l
			break
		}
	}
	if firstKey != "base_config: 'base.yml'" {
		t.Errorf("%s: the YAML's first key is %q, want base_config: 'base.yml'", name, firstKey)
	}
	if err := c.WriteFlags(&f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.String(), TrainModule+" \\\n") {
		t.Errorf("%s: flags do not start the trainer:\n%s", name, f.String())
	}
	for _, a := range c.Args() {
		k, v, _ := strings.Cut(a, "=")
		if !strings.Contains(y.String(), "\n"+k+": "+v+"\n") && !strings.Contains(y.String(), "\n"+k+": '"+v+"'\n") {
			t.Errorf("%s: flag %s is not in the YAML:\n%s", name, a, y.String())
		}
		if !strings.Contains(f.String(), "  "+a+" \\\n") && !strings.HasSuffix(f.String(), "  "+a+"\n") {
			t.Errorf("%s: flag %s is not on its own line:\n%s", name, a, f.String())
		}
	}
}

// checkModel holds the model a config writes to MaxText: a catalog model
// MaxText ships by its model_name, one MaxText accepts, with no key its
// config sets written over it; any other by its dimensions on a decoder
// block, with each key MaxText's configs of that block set written or
// named in a comment.
func checkModel(t *testing.T, name string, m model.Spec, c MaxTextConfig) {
	t.Helper()
	names := readListOf(t, "testdata/maxtext-model-names.txt", 50)
	cfgs := readConfigs(t)
	written := map[string]any{}
	for _, s := range c.Settings {
		written[s.Key] = s.Value
	}
	if _, ok := written["override_model_config"]; ok {
		t.Errorf("%s: override_model_config written: nothing should override a MaxText model config", name)
	}
	// every catalog model is one MaxText ships (TestMaxTextNamesEveryCatalogModel)
	if cat, ok := model.Lookup(m.Name); ok && cat == m {
		mt, _ := maxtext.ModelNamed(m.Name)
		if written["model_name"] != mt.Name || !names[mt.Name] {
			t.Errorf("%s: model_name %v, want %q, the name MaxText ships it under", name, written["model_name"], mt.Name)
		}
		for k := range written {
			if _, set := cfgs[mt.Name][k]; set {
				t.Errorf("%s: %s written over MaxText's models/%s.yml, which sets it", name, k, mt.Name)
			}
		}
		return
	}
	if _, ok := written["model_name"]; ok {
		t.Errorf("%s: model_name written for %s, which is no MaxText model", name, m.Name)
	}
	block, _ := written["decoder_block"].(string)
	refs, ok := blockConfigs[block]
	if !ok {
		t.Errorf("%s: decoder_block %q, want one of the blocks shardlab writes", name, block)
		return
	}
	comments := strings.Join(c.Comments, "\n")
	for _, ref := range refs {
		for k := range cfgs[ref] {
			if _, ok := written[k]; ok || k == "logical_axis_rules" { // a sharding rule, not the architecture
				continue
			}
			if !strings.Contains(comments, k+" ") {
				t.Errorf("%s: MaxText's %s.yml (decoder block %s) sets %s, which is neither written nor named in a comment", name, ref, block, k)
			}
		}
	}
	if written["enable_dropout"] != false {
		t.Errorf("%s: enable_dropout %v, want false: base.yml's is true, and shardlab costs no dropout", name, written["enable_dropout"])
	}
	for k, want := range map[string]int{"base_emb_dim": m.DModel, "base_num_query_heads": m.Heads, "base_num_kv_heads": m.KV(),
		"base_num_decoder_layers": m.Layers, "base_mlp_dim": denseWidth(m), "vocab_size": m.Vocab} {
		if written[k] != want {
			t.Errorf("%s: %s = %v, want the spec's %d", name, k, written[k], want)
		}
	}
	// types.py @e591f30c lines 3896-3911: a fully MoE model (no first
	// dense layers) is refused unless base_mlp_dim = base_moe_mlp_dim
	if fd, _ := written["first_num_dense_layers"].(int); m.MoE() && fd == 0 {
		if moe, ok := written["base_moe_mlp_dim"]; ok && written["base_mlp_dim"] != moe {
			t.Errorf("%s: base_mlp_dim %v, base_moe_mlp_dim %v: MaxText refuses a fully MoE model whose two differ", name, written["base_mlp_dim"], moe)
		}
	}
}

// denseWidth is the width of the spec's dense MLP as MaxText sizes it
// (base_mlp_dim): the spec's d_ff where it has dense layers; in a model
// of MoE layers only, the experts' (MaxText's mixtral block builds its
// experts base_mlp_dim wide, models/mixtral.py line 115 @e591f30c).
func denseWidth(m model.Spec) int {
	if m.MoE() && m.FirstDenseLayers == 0 {
		return m.ExpertFF()
	}
	return m.DFF
}

// search plans a job as the CLI does.
func search(t *testing.T, edit func(*plan.Options)) plan.Plan {
	t.Helper()
	o := plan.DefaultOptions()
	edit(&o)
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	return p
}

// exportCases are plans of every generation, single slice, multislice
// and pipelined, with the settings that change what is written.
var exportCases = append([]exportCase{
	{"v2 searched", func(o *plan.Options) { o.Model, o.TPU = "llama2-7b", "v2-32" }, nil},
	{"v3 searched", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v3-32" }, nil},
	{"v4 searched", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v4-32" }, nil},
	{"v5e searched", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v5litepod-16" }, nil},
	{"v5p searched", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v5p-32" }, nil},
	{"v6e searched", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v6e-16" }, nil},
	{"tpu7x searched", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "tpu7x-128" }, nil},
	{"tpu7x 1 sequence per chip", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Remat = "llama3-8b", "tpu7x-32", "fsdp=16,context=2", "16", "full"
	}, map[string]any{"ici_fsdp_parallelism": 16, "ici_context_parallelism": 2, "per_device_batch_size": 0.5}},
	{"tpu7x multislice", func(o *plan.Options) {
		o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch = "llama3-70b", "tpu7x-128", 2, "data=2(dcn),fsdp=128", "256"
	}, map[string]any{"ici_fsdp_parallelism": 128, "dcn_data_parallelism": 2, "per_device_batch_size": 1.0}},
	{"v5e multislice", func(o *plan.Options) { o.Model, o.TPU, o.Slices = "llama2-7b", "v5litepod-256", 4 }, nil},
	{"v6e multislice searched", func(o *plan.Options) { o.Model, o.TPU, o.Slices = "llama3-70b", "v6e-256", 2 }, nil},
	{"v5p gpipe across slices", func(o *plan.Options) {
		o.Model, o.TPU, o.Slices, o.Mesh, o.Schedule, o.GlobalBatch = "llama3-70b", "v5p-128", 2, "fsdp=32,tensor=2,pipeline=2(dcn)", "gpipe", "256"
	}, map[string]any{"dcn_pipeline_parallelism": 2, "num_pipeline_repeats": 1, "num_layers_per_pipeline_stage": 40}},
	{"tpu7x circular inside a slice", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.Schedule, o.Chunks, o.GlobalBatch = "llama3-70b", "tpu7x-128", "fsdp=32,pipeline=4", "circular", 5, "128"
	}, map[string]any{"ici_pipeline_parallelism": 4, "num_pipeline_repeats": 5, "num_layers_per_pipeline_stage": 4}},
	{"v4 remat none, bf16, int8, offload, vocab tiles", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.Remat, o.Precision, o.Quantization = "llama2-7b", "v4-64", "fsdp=32", "none", "bf16", "int8"
		o.OptimizerOffload, o.VocabTiles, o.GlobalBatch = true, 4, "32"
	}, map[string]any{"remat_policy": "custom", "query_proj": "device", "mlpwo": "remat", "weight_dtype": "bfloat16", "mu_dtype": "bfloat16", "quantization": "int8", "use_qwix_quantization": true, "optimizer_memory_host_offload": true, "num_vocab_tiling": 4}},
	{"tpu7x custom remat, fp8, dot_product", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.Remat, o.RematCustom = "llama3-70b", "tpu7x-128", "fsdp=128", "custom", "query_proj=device,key_proj=offload,mlpwo=device"
		o.Quantization, o.Attention, o.GlobalBatch = "fp8", "dot_product", "128"
	}, map[string]any{"remat_policy": "custom", "query_proj": "device", "key_proj": "offload", "value_proj": "remat", "quantization": "fp8_full", "attention": "dot_product"}},
	{"gpt3 ungated custom", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.Remat, o.RematCustom, o.GlobalBatch = "gpt3-175b", "v5p-1024", "fsdp=64,tensor=8", "custom", "mlpwi=device", "512"
	}, map[string]any{"mlpwi": "device", "qkv_proj": "remat", "ici_tensor_parallelism": 8, "model_name": "gpt3-175b"}},
	{"gemma2 on v6e", func(o *plan.Options) { o.Model, o.TPU = "gemma2-9b", "v6e-64" }, map[string]any{"model_name": "gemma2-9b"}},
	{"custom spec by its dimensions", func(o *plan.Options) {
		o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "small.yaml", []byte(smallSpec), "v5p-16", "fsdp=8", "16"
	}, map[string]any{"decoder_block": "llama2", "base_emb_dim": 2048, "base_num_kv_heads": 4, "head_dim": 128, "vocab_size": 32000, "logits_via_embedding": true}},
	{"custom spec with multi-token prediction", func(o *plan.Options) {
		o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "small.yaml", []byte(smallSpec+"mtp_layers: 1\n"), "v5p-16", "fsdp=8", "16"
	}, map[string]any{"decoder_block": "llama2", "mtp_num_layers": 1}},
	// MaxText ships mixtral-8x7b (models/mixtral-8x7b.yml @e591f30c): named,
	// its dimensions, RoPE base and routing are the config's
	{"mixtral expert parallel, capacity factor", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.CapacityFactor = "mixtral-8x7b", "v5p-128", "fsdp=8,expert=8", "256", 1.25
	}, map[string]any{"model_name": "mixtral-8x7b", "ici_expert_parallelism": 8, "ici_fsdp_parallelism": 8, "capacity_factor": 1.25, "sparse_matmul": false, "megablox": false,
		"shard_exp_on_fsdp": false, "use_ring_of_experts": false}},
	{"mixtral searched, dropless", func(o *plan.Options) { o.Model, o.TPU = "mixtral-8x7b", "v5p-128" },
		map[string]any{"sparse_matmul": true, "megablox": true, "capacity_factor": -1.0}},
	// MaxText's models/deepseek3-671b.yml @e591f30c: decoder_block
	// deepseek, attention_type mla, the same MoE and MLA dimensions.
	{"deepseek-v3-like expert parallel", func(o *plan.Options) {
		o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "deepseek-v3-like.yaml", []byte(deepSeekSpec), "tpu7x-512", "fsdp=32,expert=16", "1024"
	}, map[string]any{"decoder_block": "deepseek", "attention_type": "mla", "num_experts": 256, "num_experts_per_tok": 8, "shared_experts": 1,
		"first_num_dense_layers": 3, "base_moe_mlp_dim": 2048, "base_mlp_dim": 18432, "q_lora_rank": 1536, "kv_lora_rank": 512,
		"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "ici_expert_parallelism": 16}},
	// searched, the plan runs expert=4 as a ring of experts, as MaxText's
	// own DeepSeek-V3 example on tpu7x-512 does (docs/guides/optimization/
	// benchmark_and_performance.md @e591f30c: ici_expert_parallelism=4,
	// use_ring_of_experts=true, sparse_matmul=true)
	{"deepseek-v3-like searched: ring of experts", func(o *plan.Options) {
		o.Model, o.ModelSpec, o.TPU = "deepseek-v3-like.yaml", []byte(deepSeekSpec), "tpu7x-512"
	}, map[string]any{"ici_expert_parallelism": 4, "use_ring_of_experts": true, "sparse_matmul": true, "capacity_factor": -1.0}},
	{"v5p context parallel", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-8b", "v5p-64", "fsdp=16,context=2", "32"
	}, map[string]any{"ici_context_parallelism": 2, "model_name": "llama3-8b"}},
	{"llama3-405b is MaxText's llama3.1-405b", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-405b", "v5p-1024", "fsdp=64,tensor=8", "512"
	}, map[string]any{"model_name": "llama3.1-405b"}},
	{"deepseek3-671b by name", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch = "deepseek3-671b", "tpu7x-512", "fsdp=32,expert=16", "1024"
	}, map[string]any{"model_name": "deepseek3-671b", "ici_expert_parallelism": 16}},
	{"qwen3-235b by name", func(o *plan.Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch = "qwen3-235b-a22b", "tpu7x-256", "fsdp=32,expert=8", "512"
	}, map[string]any{"model_name": "qwen3-235b-a22b"}},
	{"custom MoE spec on the mixtral block", func(o *plan.Options) {
		o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "small-moe.yaml", []byte(strings.Replace(smallSpec, "tied_embeddings: true", "experts: 8\nexperts_per_token: 2", 1)), "v5p-16", "fsdp=2,expert=4", "16"
	}, map[string]any{"decoder_block": "mixtral", "num_experts": 8, "base_moe_mlp_dim": 5632, "enable_dropout": false}},
	// a spec whose experts are narrower than its d_ff (Qwen3-MoE-like):
	// MaxText refuses a fully MoE model with base_mlp_dim apart from
	// base_moe_mlp_dim (types.py @e591f30c lines 3896-3911)
	{"custom MoE spec with narrower experts", func(o *plan.Options) {
		o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "small-moe.yaml", []byte(strings.Replace(smallSpec, "tied_embeddings: true", "experts: 8\nexperts_per_token: 2\nexpert_d_ff: 1408", 1)), "v5p-16", "fsdp=2,expert=4", "16"
	}, map[string]any{"decoder_block": "mixtral", "base_moe_mlp_dim": 1408, "base_mlp_dim": 1408}},
	// a fixed batch one pass does not fit: gradient accumulation, one
	// sequence a chip per micro-batch (a v6e chip is one device), as the
	// expert review asked MaxText to run them
	{"gradient accumulation", func(o *plan.Options) {
		o.Model, o.TPU, o.GlobalBatch, o.Framework = "llama3-8b", "v6e-8", "64", "maxtext"
	}, map[string]any{"ici_fsdp_parallelism": 8, "per_device_batch_size": 1.0, "gradient_accumulation_steps": 8}},
	{"gradient accumulation, 70b", func(o *plan.Options) {
		o.Model, o.TPU, o.GlobalBatch, o.Framework = "llama3-70b", "v6e-256", "2048", "maxtext"
	}, map[string]any{"per_device_batch_size": 1.0, "gradient_accumulation_steps": 8}},
	// the steps given with the layout, as plan --verify's export asks
	{"gradient accumulation given", func(o *plan.Options) {
		o.Model, o.TPU, o.Seq, o.GlobalBatch, o.Mesh, o.GradientAccumulationSteps = "llama3-8b", "v6e-8", 4096, "64", "fsdp=8", 4
	}, map[string]any{"ici_fsdp_parallelism": 8, "per_device_batch_size": 2.0, "gradient_accumulation_steps": 4}},
}, caseEachRemat()...)

type exportCase struct {
	name string
	edit func(*plan.Options)
	want map[string]any // settings the case is there for
}

// caseEachRemat is an export of each remat policy shardlab costs.
func caseEachRemat() []exportCase {
	var out []exportCase
	for _, r := range cost.Remats() {
		out = append(out, exportCase{"remat " + string(r), func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Remat = "llama3-8b", "v5p-64", "fsdp=32", "64", string(r)
			o.OptimizerOffload = r == cost.RematMinimalOffloaded || r == cost.RematQKVProjOffloaded
		}, map[string]any{"remat_policy": map[cost.Remat]string{cost.RematNone: "custom"}[r] + map[bool]string{true: string(r)}[r != cost.RematNone]}})
	}
	return out
}

// deepSeekSpec is DeepSeek-V3's shape (arXiv 2412.19437 and its
// config.json), as cmd/shardlab/testdata/deepseek-v3-like.yaml.
const deepSeekSpec = `name: deepseek-v3-like
layers: 61
d_model: 7168
heads: 128
head_dim: 128
d_ff: 18432
vocab: 129280
seq_len: 4096
gated_mlp: true
experts: 256
experts_per_token: 8
shared_experts: 1
expert_d_ff: 2048
first_dense_layers: 3
q_lora_rank: 1536
kv_lora_rank: 512
qk_rope_head_dim: 64
v_head_dim: 128
`

func TestMaxTextRules(t *testing.T) {
	gens := map[hw.Generation]bool{}
	for _, tt := range exportCases {
		t.Run(tt.name, func(t *testing.T) {
			p := search(t, tt.edit)
			c, err := MaxText(p)
			if err != nil {
				t.Fatal(err)
			}
			checkMaxText(t, tt.name, p, c)
			for k, w := range tt.want {
				if got, ok := c.Get(k); !ok || got != w {
					t.Errorf("%s = %#v, want %#v", k, got, w)
				}
			}
			if _, ok := c.Get("mlpwi_0"); ok && !p.Best.Estimate.Job.Model.GatedMLP {
				t.Errorf("mlpwi_0 written for a model without a gated MLP (MaxText tags its one input projection mlpwi)")
			}
			gens[p.Request.Multislice.Slice.Chip.Generation] = true
		})
	}
	for _, c := range hw.Chips() {
		if !gens[c.Generation] {
			t.Errorf("no export case for %s", c.Generation)
		}
	}
}

// TestMaxTextRefuses: a plan MaxText would run differently is refused,
// naming the mismatch and what to pass.
func TestMaxTextRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*plan.Options)
		want []string
	}{
		{"1f1b", func(o *plan.Options) {
			o.Model, o.TPU, o.Slices, o.Mesh, o.Schedule = "llama3-70b", "v5p-128", 2, "fsdp=32,tensor=2,pipeline=2(dcn)", "1f1b"
		}, []string{"1f1b", "--schedule gpipe", "circular", "752"}},
		{"interleaved", func(o *plan.Options) {
			o.Model, o.TPU, o.Slices, o.Mesh, o.Schedule = "llama3-70b", "v5p-128", 2, "fsdp=32,tensor=2,pipeline=2(dcn)", "interleaved"
		}, []string{"interleaved", "--schedule gpipe"}},
		{"gemma2 pipeline over unpaired layers", func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.Schedule, o.GlobalBatch = "gemma2-9b", "v5p-128", "fsdp=32,pipeline=2", "gpipe", "64"
		}, []string{"21 decoder layers", "pairs 2"}},
		{"fused qkv placed apart", func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.Remat, o.RematCustom, o.GlobalBatch = "gpt3-175b", "v5p-1024", "fsdp=64,tensor=8", "custom", "query_proj=device", "512"
		}, []string{"qkv_proj", "--remat-custom"}},
		{"zero precision", func(o *plan.Options) { o.Model, o.TPU, o.Mesh, o.Precision = "llama3-8b", "v5p-64", "fsdp=32", "zero" }, []string{"precision zero", "--precision maxtext"}},
		{"parallel block", func(o *plan.Options) {
			o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "small.yaml", []byte(smallSpec+"parallel_block: true\nnorms_per_layer: 1\n"), "v5p-16", "fsdp=8", "16"
		}, []string{"sequential", "model_name"}},
		// the llama2 block attends globally in every layer: a custom spec
		// with sliding-window layers (which cost now trains) would train
		// as another model (gemma2 review)
		{"sliding window", func(o *plan.Options) {
			o.Model, o.ModelSpec, o.TPU, o.Mesh, o.GlobalBatch = "small.yaml", []byte(smallSpec+"sliding_window: 64\nglobal_attention_every: 2\n"), "v5p-16", "fsdp=8", "16"
		}, []string{"sliding-window", "model_name"}},
	} {
		_, err := MaxText(search(t, tt.edit))
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: MaxText error %v, want ErrUnsupported", tt.name, err)
			continue
		}
		got := asFlags(t, err)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: error %q lacks %q", tt.name, got, w)
			}
		}
	}
}

// asFlags is an export error as the CLI words it: the planner options it
// names spelt as flags. The library's own text names options, never flags.
func asFlags(t *testing.T, err error) string {
	t.Helper()
	var xe *Error
	if !errors.As(err, &xe) {
		t.Fatalf("%v is not an *export.Error", err)
	}
	if strings.Contains(err.Error(), " --") {
		t.Errorf("library error %q names a flag", err)
	}
	return xe.Phrase(func(o plan.Option) string { return "--" + strings.ReplaceAll(string(o), "_", "-") })
}

// TestMaxTextOddBatchOnTPU7x: a chip with one sequence and a sequence that
// does not split has nothing to give its second device; the error says so.
// No {mesh} in devices asks for that chip layout (it has no MaxText mesh),
// so the request asks for it in chips (plan.Request.Axes).
func TestMaxTextOddBatchOnTPU7x(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.GlobalBatch, o.Seq, o.Remat = "llama3-8b", "tpu7x-32", "16", 1002, "full"
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Axes, err = mesh.ParseAxes("fsdp=16"); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	_, err = MaxText(p)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(asFlags(t, err), "--global-batch") || !strings.Contains(err.Error(), "2 JAX devices") {
		t.Errorf("MaxText = %v, want ErrUnsupported asking for another --global-batch", err)
	}
}

func TestPerDeviceBatch(t *testing.T) {
	for devices := 1; devices <= 1024; devices *= 2 {
		for _, d := range []int{devices, devices * 3, devices * 7} {
			for batch := 1; batch <= 300; batch += 7 {
				v, err := perDeviceBatch(batch, d)
				if err != nil {
					t.Fatal(err)
				}
				w, _ := strconv.ParseFloat(formatFloat(v), 64)
				if int(float64(d)*w) != batch {
					t.Errorf("perDeviceBatch(%d, %d) = %s: MaxText would train on %d", batch, d, formatFloat(v), int(float64(d)*w))
				}
			}
		}
	}
}

// smallSpec is a model MaxText has no config for, of its llama2 block.
const smallSpec = `name: small
layers: 8
d_model: 2048
heads: 16
kv_heads: 4
d_ff: 5632
vocab: 32000
seq_len: 2048
gated_mlp: true
tied_embeddings: true
`

// TestMaxTextModels holds maxtext's table of models (maxtext.ModelNamed) to MaxText at e591f30c: each
// name one its ModelName accepts, and its config's architecture the
// catalog model's (layers counted as MaxText counts them), so that naming
// it trains what was costed.
func TestMaxTextModels(t *testing.T) {
	names := readListOf(t, "testdata/maxtext-model-names.txt", 50)
	cfgs := readConfigs(t)
	for _, catName := range maxtext.CatalogNames() {
		a, _ := maxtext.ModelNamed(catName)
		m, ok := model.Lookup(catName)
		if !ok {
			t.Errorf("maxtext.CatalogNames has %s, which the catalog does not", catName)
			continue
		}
		if !names[a.Name] {
			t.Errorf("%s: model_name %q is not in MaxText's ModelName", catName, a.Name)
		}
		if _, ok := cfgs[a.Name]; !ok {
			t.Errorf("%s: MaxText has no models/%s.yml", catName, a.Name)
			continue
		}
		num := func(k string) int {
			f, _ := configValue(cfgs, a.Name, k).(float64)
			return int(f)
		}
		acts, _ := configValue(cfgs, a.Name, "mlp_activations").([]any)
		experts := max(m.Experts, 1) // base.yml's num_experts 1 is a dense MLP
		got := map[string]any{"decoder_block": configValue(cfgs, a.Name, "decoder_block"), "fused_qkv": configValue(cfgs, a.Name, "fused_qkv"),
			"base_emb_dim": num("base_emb_dim"), "base_num_query_heads": num("base_num_query_heads"), "base_num_kv_heads": num("base_num_kv_heads"),
			"base_num_decoder_layers": num("base_num_decoder_layers"), "base_mlp_dim": num("base_mlp_dim"),
			"logits_via_embedding": configValue(cfgs, a.Name, "logits_via_embedding"), "mlp_activations": len(acts),
			"num_experts": num("num_experts"), "num_experts_per_tok": num("num_experts_per_tok"), "shared_experts": num("shared_experts"),
			"first_num_dense_layers": num("first_num_dense_layers"), "interleave_moe_layer_step": num("interleave_moe_layer_step"),
			"mla": configValue(cfgs, a.Name, "attention_type") == "mla"}
		want := map[string]any{"decoder_block": a.Block, "fused_qkv": a.FusedQKV,
			"base_emb_dim": m.DModel, "base_num_query_heads": m.Heads, "base_num_kv_heads": m.KV(),
			"base_num_decoder_layers": m.Layers / a.Pairs, "base_mlp_dim": m.DFF,
			"logits_via_embedding": m.TiedEmbeddings, "mlp_activations": map[bool]int{true: 2, false: 1}[m.GatedMLP],
			"num_experts": experts, "num_experts_per_tok": max(m.ExpertsPerToken, 1), "shared_experts": m.SharedExperts,
			"first_num_dense_layers": m.FirstDenseLayers, "interleave_moe_layer_step": max(m.MoEEvery, 1), "mla": m.MLA()}
		if m.MoE() {
			got["base_moe_mlp_dim"], want["base_moe_mlp_dim"] = num("base_moe_mlp_dim"), m.ExpertFF()
		}
		if m.MLA() {
			for k, w := range map[string]int{"q_lora_rank": m.QLoRARank, "kv_lora_rank": m.KVLoRARank, "qk_nope_head_dim": m.Head(),
				"qk_rope_head_dim": m.QKRopeHeadDim, "v_head_dim": m.VHead()} {
				got[k], want[k] = num(k), w
			}
		} else {
			got["head_dim"], want["head_dim"] = num("head_dim"), m.Head()
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: MaxText's models/%s.yml has %s %v, the catalog and maxtext.ModelNamed %v", catName, a.Name, k, got[k], w)
			}
		}
		// MaxText pads GPT-3's vocabulary (50257) to a multiple of 128 for
		// sharding; the 47 extra rows are 0.0003 % of its parameters
		if v := num("vocab_size"); v != m.Vocab && (v%128 != 0 || v-m.Vocab >= 128) {
			t.Errorf("%s: MaxText's vocab_size %d, the catalog's %d", catName, v, m.Vocab)
		}
		if a.Pairs*(m.Layers/a.Pairs) != m.Layers {
			t.Errorf("%s: %d layers do not pair into MaxText's", catName, m.Layers)
		}
		// the llama4 and qwen3_5 blocks scan and remat
		// inhomogeneous_layer_cycle_interval layers as one unit
		// (model/block.go), which the catalog's scan_block says
		if a.Block == "llama4" || a.Block == "qwen3_5" {
			if got := num("inhomogeneous_layer_cycle_interval"); got != m.BlockLayers() {
				t.Errorf("%s: MaxText's models/%s.yml scans %d layers a block, the catalog's scan_block %d", catName, a.Name, got, m.BlockLayers())
			}
		}
		// the decoder layers that call no checkpoint_name(inputs,
		// "decoder_layer_input"): qwen3_next's and qwen3_5's
		// (models/qwen3.py 1279-1420, models/qwen3_5.py 58-246 @e591f30c;
		// every other models/*.py decoder layer tags it)
		untagged := a.Block == "qwen3_next" || a.Block == "qwen3_5"
		if m.TagsLayerInput() == untagged {
			t.Errorf("%s: the catalog says its layers tag decoder_layer_input %v, MaxText's %s layers %v", catName, m.TagsLayerInput(), a.Block, !untagged)
		}
	}
}

// TestMaxTextNamesEveryCatalogModel: each catalog model is exported by a
// model_name MaxText accepts (types.py ModelName @e591f30c), and nothing
// else; llama3-405b is llama3.1-405b there.
func TestMaxTextNamesEveryCatalogModel(t *testing.T) {
	names := readListOf(t, "testdata/maxtext-model-names.txt", 50)
	for _, m := range model.Catalog() {
		var c MaxTextConfig
		var got []Setting
		if _, err := maxTextModel(func(k string, v any) { got = append(got, Setting{k, v}) }, &c, m); err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		if len(got) != 1 || got[0].Key != "model_name" {
			t.Errorf("%s: writes %v, want model_name alone", m.Name, got)
			continue
		}
		if name, _ := got[0].Value.(string); !names[name] {
			t.Errorf("%s: model_name %q, which MaxText's ModelName does not accept", m.Name, name)
		}
	}
}

// TestBlockUnsetIsBaseYML: the values the comment names for the keys a
// spec leaves out are base.yml's, and the keys each block's configs set.
func TestBlockUnsetIsBaseYML(t *testing.T) {
	cfgs := readConfigs(t)
	for block, unset := range blockUnset {
		if _, ok := blockConfigs[block]; !ok {
			t.Errorf("blockUnset has %s, blockConfigs does not", block)
		}
		if _, ok := blockExample[block]; !ok {
			t.Errorf("blockExample lacks %s", block)
		}
		for _, s := range unset {
			var want any
			if err := json.Unmarshal([]byte(s.Value.(string)), &want); err != nil {
				t.Fatalf("%s: %s %s: %v", block, s.Key, s.Value, err)
			}
			if got := cfgs["base.yml"][s.Key]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s: the comment says base.yml has %v, it has %v", block, s.Key, want, got)
			}
			used := false
			for _, ref := range blockConfigs[block] {
				_, set := cfgs[ref][s.Key]
				used = used || set
			}
			if !used {
				t.Errorf("%s: %s is set by none of the block's configs", block, s.Key)
			}
		}
	}
}

func TestLayoutCommentCountsDevices(t *testing.T) {
	// TPU7x: the header names the layout as --mesh took it, in JAX devices,
	// and the chips' beside it; one device a chip: the layout alone.
	for _, c := range []struct{ tpu, mesh, want string }{
		{"tpu7x-256", "fsdp=256", "# layout fsdp=256 in JAX devices (fsdp=128 in chips), MFU "},
		{"v5p-8", "fsdp=4", "# layout fsdp=4, MFU "},
	} {
		p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Mesh = "llama3-8b", c.tpu, c.mesh })
		cfg, err := MaxText(p)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := cfg.WriteYAML(&b); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); !strings.Contains(out, c.want) {
			t.Errorf("%s --mesh %s: header lacks %q:\n%s", c.tpu, c.mesh, c.want, out)
		}
	}
}

// TestMaxTextVocabTilesSearched: a batch the planner picks itself meets
// MaxText's rule for num_vocab_tiling ([types.py]: per_device_batch_size
// × max_target_length a multiple of it), whatever the tile count, so the
// plan it shows exports; before, `plan --vocab-tiles 3` showed a batch of
// 28 on tpu7x-8 (3.5 × 8192 tokens a device) that the export refused.
func TestMaxTextVocabTilesSearched(t *testing.T) {
	for _, tt := range []struct {
		model, tpu string
		seq, tiles int
	}{
		{"llama3-8b", "tpu7x-8", 0, 3},
		{"llama3-8b", "v5p-64", 0, 8},
		{"llama3-8b", "v4-32", 1000, 7},
		{"llama3-70b", "v6e-64", 0, 5},
		{"llama3-8b", "tpu7x-64", 4095, 16},
	} {
		p := search(t, func(o *plan.Options) {
			o.Model, o.TPU, o.Seq, o.VocabTiles, o.Top = tt.model, tt.tpu, tt.seq, tt.tiles, 1
			if tt.seq%maxtext.SplashBlock != 0 {
				// MaxText's flash attention cuts no such sequence into
				// its blocks (maxtext.FlashBlocks); dot_product has none
				o.Attention = "dot_product"
			}
		})
		c, err := MaxText(p)
		if err != nil {
			t.Errorf("%s on %s, %d tiles: batch %d: MaxText: %v", tt.model, tt.tpu, tt.tiles, p.Best.Estimate.Job.GlobalBatch, err)
			continue
		}
		v, _ := c.Get(maxtext.PerDeviceBatchSize)
		pdbs, ok := v.(float64)
		if !ok {
			t.Fatalf("%s = %v (%T), want a float64", maxtext.PerDeviceBatchSize, v, v)
		}
		if tokens := pdbs * float64(p.Best.Estimate.Job.Seq); math.Mod(tokens, float64(tt.tiles)) != 0 {
			t.Errorf("%s on %s: %g tokens a device, not a multiple of %d tiles", tt.model, tt.tpu, tokens, tt.tiles)
		}
	}
}

// TestChangedMaxTextModelIsNamed: a spec named as a model MaxText ships
// but changed (here Llama 3 8B with 16 layers) is written by its
// dimensions, and its comment said "llama3-8b is no MaxText model", which
// is false of the name; it says the spec is not MaxText's model of that
// name. A spec of a name MaxText does not ship keeps the old words.
func TestChangedMaxTextModelIsNamed(t *testing.T) {
	m, ok := model.Lookup("llama3-8b")
	if !ok {
		t.Fatal("llama3-8b not in the catalog")
	}
	m.Layers = 16
	var c MaxTextConfig
	set := func(k string, v any) { c.Settings = append(c.Settings, Setting{k, v}) }
	if _, err := maxTextModel(set, &c, m); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Comments, "\n")
	if !strings.Contains(got, "llama3-8b is not MaxText's llama3-8b: its dimensions differ") || strings.Contains(got, "no MaxText model") {
		t.Errorf("changed llama3-8b: comments\n%s", got)
	}
	if v, set := c.Get("model_name"); set {
		t.Errorf("changed llama3-8b: model_name %v written", v)
	}
	m.Name = "my-8b"
	c = MaxTextConfig{}
	if _, err := maxTextModel(set, &c, m); err != nil || !strings.Contains(strings.Join(c.Comments, "\n"), "my-8b is no MaxText model") {
		t.Errorf("my-8b: %v, comments %q", err, c.Comments)
	}
}

// TestMaxTextOptionsFramework: an export to MaxText plans only what
// MaxText runs, and a framework the options name is read as plan reads it:
// none, any or maxtext (any case) plan as MaxText; another is refused,
// naming the framework option, not replaced by maxtext.
func TestMaxTextOptionsFramework(t *testing.T) {
	for _, c := range []struct {
		framework string
		ok        bool
	}{{"", true}, {"any", true}, {"MaxText", true}, {"pytorch", false}, {"maxtext2", false}} {
		o := plan.DefaultOptions()
		o.Framework = c.framework
		got, err := MaxTextOptions(o)
		var oe *plan.OptionError
		switch {
		case c.ok && (err != nil || got.Framework != string(plan.FrameworkMaxText)):
			t.Errorf("MaxTextOptions(framework %q) = %q, %v; want maxtext", c.framework, got.Framework, err)
		case !c.ok && (!errors.As(err, &oe) || oe.Option != plan.OptionFramework || !strings.Contains(err.Error(), `"`+c.framework+`", want any`) || !strings.Contains(err.Error(), "maxtext")):
			t.Errorf("MaxTextOptions(framework %q) = %v, want an OptionError on framework naming the value and maxtext", c.framework, err)
		}
	}
}
