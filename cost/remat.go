package cost

import (
	"fmt"
	"slices"
	"strings"
)

// Remat is a rematerialisation (activation checkpointing) policy, named as
// MaxText's remat_policy names it (src/MaxText/configs/base.yml and
// layers/decoders.py), plus "none", which keeps every residual the
// backward pass needs.
type Remat string

// The policies. Each says, for the activations a decoder layer tags with
// checkpoint_name (decoder_layer_input, query_proj, key_proj, value_proj,
// context, out_proj, mlpwi_0, mlpwi_1, mlpwo), whether the backward pass
// finds it in HBM, in host memory (offloaded), or recomputes it.
const (
	// RematNone keeps every residual: no recompute.
	RematNone Remat = "none"
	// RematMinimalWithContext keeps the outputs of the projections and the
	// attention output (context): only norms and elementwise work is redone.
	RematMinimalWithContext Remat = "minimal_with_context"
	// RematMinimal keeps the projections' outputs (JAX's
	// checkpoint_dots_with_no_batch_dims): the attention core is recomputed.
	RematMinimal Remat = "minimal"
	// RematSaveDotExceptMLPWi keeps Q, K, V, the output projection and
	// mlpwo, and recomputes the MLP's input projections.
	RematSaveDotExceptMLPWi Remat = "save_dot_except_mlpwi"
	// RematSaveDotExceptMLP keeps Q, K, V and the output projection.
	RematSaveDotExceptMLP Remat = "save_dot_except_mlp"
	// RematSaveQKVProj keeps Q, K and V.
	RematSaveQKVProj Remat = "save_qkv_proj"
	// RematSaveOutProj keeps the output projection.
	RematSaveOutProj Remat = "save_out_proj"
	// RematQKVProjOffloaded moves Q, K and V to host memory.
	RematQKVProjOffloaded Remat = "qkv_proj_offloaded"
	// RematMinimalOffloaded moves every projection output to host memory.
	RematMinimalOffloaded Remat = "minimal_offloaded"
	// RematFull keeps only each layer's input and recomputes the layer.
	RematFull Remat = "full"
	// RematCustom places each tagged tensor as Job.Custom says.
	RematCustom Remat = "custom"
)

// Remats lists the policies, least recompute first.
func Remats() []Remat { return slices.Clone(policies[:]) }

// policies is the policies Remats lists (an array: Remats hands out a
// copy).
var policies = [...]Remat{RematNone, RematMinimalWithContext, RematMinimal, RematMinimalOffloaded, RematSaveDotExceptMLPWi,
	RematSaveDotExceptMLP, RematSaveQKVProj, RematQKVProjOffloaded, RematSaveOutProj, RematFull, RematCustom}

// SearchRemats is the policies a plan tries when none is asked for:
// MaxText's, one per distinct memory/recompute trade-off on device (the
// offloaded ones need host memory and PCIe time the user should choose
// knowingly; none is not a MaxText policy).
func SearchRemats() []Remat {
	return []Remat{RematMinimal, RematSaveDotExceptMLP, RematSaveQKVProj, RematFull}
}

// ParseRemat reads a policy name, in any case.
func ParseRemat(s string) (Remat, error) {
	for _, r := range Remats() {
		if strings.EqualFold(strings.TrimSpace(s), string(r)) {
			return r, nil
		}
	}
	return "", fmt.Errorf("cost: remat policy %q, want one of %s", s, remats())
}

func remats() string {
	var names []string
	for _, r := range Remats() {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}

// Place is where the backward pass finds a tagged activation.
type Place uint8

// The places, as MaxText's custom policy names them.
const (
	Recompute Place = iota // recomputed from what is kept (MaxText: remat)
	Device                 // kept in HBM
	Offload                // moved to host memory over PCIe and back
)

var placeNames = [...]string{Recompute: "remat", Device: "device", Offload: "offload"}

func (p Place) String() string { return placeNames[p] }

// ParsePlace reads device, offload or remat.
func ParsePlace(s string) (Place, error) {
	for p, n := range placeNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Place(p), nil
		}
	}
	return 0, fmt.Errorf("cost: place %q, want device, offload or remat", s)
}

// Tensor is an activation a decoder layer tags with checkpoint_name.
type Tensor uint8

// The tagged tensors. For a model without a gated MLP, MLPWi0 is MaxText's
// mlpwi and MLPWi1 is absent.
const (
	LayerInput Tensor = iota // decoder_layer_input: the scan carry, always kept
	Query                    // query_proj
	Key                      // key_proj
	Value                    // value_proj
	Context                  // context: the attention output
	OutProj                  // out_proj
	MLPWi0                   // mlpwi_0 (mlpwi)
	MLPWi1                   // mlpwi_1
	MLPWo                    // mlpwo: a dense MLP's feeds only the residual sum; an MoE layer's routed rows feed the combine
	NumTensors
)

var tensorNames = [NumTensors]string{"decoder_layer_input", "query_proj", "key_proj", "value_proj", "context", "out_proj", "mlpwi_0", "mlpwi_1", "mlpwo"}

func (t Tensor) String() string { return tensorNames[t] }

// ParseTensor reads a checkpoint name (mlpwi is read as mlpwi_0).
func ParseTensor(s string) (Tensor, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "mlpwi" {
		return MLPWi0, nil
	}
	for t, n := range tensorNames {
		if s == n {
			return Tensor(t), nil
		}
	}
	return 0, fmt.Errorf("cost: tensor %q, want one of %s", s, strings.Join(tensorNames[:], ", "))
}

// Places is a place for every tagged tensor.
type Places [NumTensors]Place

// ParseCustom reads a custom policy, "query_proj=offload,out_proj=device";
// tensors not named are recomputed, except the layer input, which the scan
// always keeps on device.
func ParseCustom(s string) (Places, error) {
	var p Places
	p[LayerInput] = Device
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return p, fmt.Errorf("cost: custom remat %q: want tensor=device|offload|remat", kv)
		}
		pl, err := ParsePlace(v)
		if err != nil {
			return p, err
		}
		if strings.EqualFold(strings.TrimSpace(k), "qkv_proj") { // the fused projection's name
			p[Query], p[Key], p[Value] = pl, pl, pl
			continue
		}
		t, err := ParseTensor(k)
		if err != nil {
			return p, err
		}
		p[t] = pl
	}
	return p, nil
}

// String spells the places as the {remat_custom} option takes them: each
// tensor kept or offloaded, but the layer input only where it is
// offloaded (the scan always carries it on the device).
func (p Places) String() string {
	var parts []string
	for t, pl := range p {
		if pl != Recompute && (Tensor(t) != LayerInput || pl != Device) {
			parts = append(parts, fmt.Sprintf("%s=%s", Tensor(t), pl))
		}
	}
	return strings.Join(parts, ",")
}

// MaxTextRemat is the policy MaxText runs for remat r with places p: r
// and p as they are, but for RematNone, which MaxText has no policy for,
// RematCustom with NamedNone's places. Export writes it, verify compiles
// it, check compares a log with it and plan notes what it costs.
func MaxTextRemat(r Remat, p Places) (Remat, Places) {
	if r == RematNone {
		return RematCustom, NamedNone()
	}
	return r, p
}

// NamedNone is the named-tensor policy closest to RematNone, as MaxText
// can state it (remat_policy custom): every tagged tensor kept on device
// but the MLP's output projection, which feeds only the residual sum, so
// the backward pass never reads it (keeping it would hold HBM RematNone
// does not count). MaxText has no policy that keeps every activation:
// under a custom policy it recomputes what is not named (the norms'
// outputs, the MLP's activation product: elementwiseResiduals), which
// RematNone keeps.
func NamedNone() Places {
	var p Places
	for t := range p {
		p[t] = Device
	}
	p[MLPWo] = Recompute
	return p
}

// places gives each tagged tensor's place under the policy. The sets are
// MaxText's (layers/decoders.py, get_remat_policy): minimal is
// checkpoint_dots_with_no_batch_dims, which keeps every projection output;
// the save_* policies are save_only_these_names over the names listed; the
// *_offloaded ones are save_and_offload_only_these_names.
func (j *Job) places() Places {
	var p Places
	set := func(pl Place, ts ...Tensor) {
		for _, t := range ts {
			p[t] = pl
		}
	}
	set(Device, LayerInput)
	switch j.Remat {
	case RematNone:
		set(Device, Query, Key, Value, Context, OutProj, MLPWi0, MLPWi1, MLPWo)
	case RematMinimalWithContext:
		set(Device, Query, Key, Value, Context, OutProj, MLPWi0, MLPWi1, MLPWo)
	case RematMinimal:
		set(Device, Query, Key, Value, OutProj, MLPWi0, MLPWi1, MLPWo)
	case RematSaveDotExceptMLPWi:
		set(Device, Query, Key, Value, OutProj, MLPWo)
	case RematSaveDotExceptMLP:
		set(Device, Query, Key, Value, OutProj)
	case RematSaveQKVProj:
		set(Device, Query, Key, Value)
	case RematSaveOutProj:
		set(Device, OutProj)
	case RematQKVProjOffloaded:
		set(Offload, Query, Key, Value)
	case RematMinimalOffloaded:
		set(Offload, Query, Key, Value, OutProj, MLPWi0, MLPWi1, MLPWo)
	case RematCustom:
		p = j.Custom
		p[LayerInput] = max(p[LayerInput], Device) // the scan carries it
		if !j.Model.TagsLayerInput() {
			// no decoder_layer_input to offload: the scan carries the
			// block's input on device
			p[LayerInput] = Device
		}
	}
	for t := range p {
		if !j.needed(Tensor(t)) && Tensor(t) != LayerInput {
			p[t] = Recompute // never a residual of the backward pass
		}
	}
	return p
}

// tensorWidths is each tagged tensor's elements per local token on one
// chip, with activations sharded over tensor t (sequence parallelism
// between the blocks, heads or d_ff inside them; K and V over at most KV
// shards).
//
// Query and key heads are QKHead wide, value and context heads VHead
// (both Head but under latent attention, whose attention core runs on
// full per-head keys and values); the MLP's hidden tensors are the
// layers' average mlpWidth.
//
// Key and value are the tensors the attention core reads and its
// backward keeps: the projections' outputs at the KV heads (kvWidths),
// or, where the job repeats them to the query's heads first (RepeatKV),
// the repeated copies, heads/KV times wider and split over tensor as the
// query is (the PyTorch export's flash call puts the heads over 'model').
// Nothing else keeps the KV-head ones then: under remat none autograd
// saves only the repeated K and V (the RoPE product saves its cos and
// sin, the repeat nothing), and under full the recomputed forward makes
// them again. Under AMPPrecision the key after RoPE is fp32 (a bf16
// projection times the fp32 cos and sin Hugging Face's rotary embedding
// returns in the residual stream's dtype), but under flash attention the
// script casts q, k and v to autocast's dtype before repeating them (the
// export's xla_flash_attention: "dtype = torch.get_autocast_dtype('xla')
// ...; query, key, value = query.to(dtype), ...", export/pytorchjob.go,
// shardlab 8bb0a99), so the kernel saves bf16 copies: they are costed at
// repeatedKVBytes (kvScale), not the 4 bytes AMP's other activations take.
// The fp32 key the cast reads is saved by nothing (the cast and the
// repeat save no input, RoPE's products only cos and sin) and dies there.
func (j *Job) tensorWidths(t int) [NumTensors]float64 {
	spec := &j.Model
	tf := float64(t)
	d := float64(spec.DModel) / tf
	q, ctx := float64(spec.Heads*spec.QKHead())/tf, float64(spec.Heads*spec.VHead())/tf
	k, v := j.kvWidths(t)
	if j.RepeatKV {
		k, v = q*j.kvScale(), ctx*j.kvScale()
	}
	f := j.mlpWidth() / tf
	return [NumTensors]float64{LayerInput: d, Query: q, Key: k, Value: v, Context: ctx, OutProj: d, MLPWi0: f, MLPWi1: f, MLPWo: j.routedOutWidth() / tf}
}

// repeatedKVBytes is the bytes an element of the repeated keys and values
// the export's flash function hands torch_xla's kernel: bf16, the dtype it
// casts them to under autocast on XLA (torch.get_autocast_dtype('xla')).
const repeatedKVBytes = 2

// kvScale turns the repeated K and V's elements into elements of the
// activation dtype, as the widths count them: repeatedKVBytes over the
// activation bytes where the script casts them (flash attention), at most
// 1 (without autocast the script keeps value's dtype); 1 under dot_product,
// whose Hugging Face eager attention repeats them uncast, and 1 without
// grouped-query attention, where nothing is repeated and the kernel's
// bf16 K and V stay under AMP's 4-byte bound, as its q and output do
// (export.PyTorchJob.writeAttention's fourth rule).
func (j *Job) kvScale() float64 {
	e := j.Precision.Activation
	if j.Attention == AttentionDot || e <= repeatedKVBytes || j.Model.KV() >= j.Model.Heads {
		return 1
	}
	return float64(repeatedKVBytes) / float64(e)
}

// kvWidths is the key and value projections' outputs, elements per
// local token on one chip: KV heads split over at most KV tensor shards.
func (j *Job) kvWidths(t int) (k, v float64) {
	spec := &j.Model
	kvs := float64(kvShards(spec.KV(), t))
	return float64(spec.KV()*spec.QKHead()) / kvs, float64(spec.KV()*spec.VHead()) / kvs
}

// routedOutWidth is the elements per token, averaged over the layers, of
// the mlpwo tensor the backward pass needs (needed): an MoE layer's
// routed experts' output before the combine, one d_model row per routed
// row, each token's k padded to the capacity factor where one is set
// (MaxText @e591f30c, layers/moe.py: sparse_matmul's _moe_body tags the
// grouped GEMM's [rows, d_model] output "mlpwo", and dense_matmul its
// [batch, experts, capacity, d_model] one); d_model without experts (a
// dense MLP's, which the backward never reads).
func (j *Job) routedOutWidth() float64 {
	spec := j.Model
	d := float64(spec.DModel)
	if !spec.MoE() {
		return d
	}
	pad := 1.0
	if j.CapacityFactor > 0 {
		pad = j.CapacityFactor
	}
	return float64(spec.MoELayers()) / float64(spec.Layers) * float64(spec.ExpertsPerToken) * pad * d
}

// tensorFLOPs is the forward FLOPs per token, on all chips together, of
// the projection that produces a tagged tensor (0 for the layer input and
// for context, which the attention core makes). An MoE layer's mlpwo is
// its routed experts' down-projection, k rows (padded to the capacity
// factor) of expert d_ff × d_model each: the combine's gradient for the
// router weights reads it (needed), so a policy that does not keep it
// redoes that GEMM in the backward pass. A dense MLP's mlpwo is never
// needed again, so it is never redone.
func (j *Job) tensorFLOPs(x Tensor) float64 {
	spec := j.Model
	d := float64(spec.DModel)
	switch x {
	case Query:
		return 2 * d * float64(spec.Heads*spec.QKHead())
	case OutProj:
		return 2 * d * float64(spec.Heads*spec.VHead())
	case Key:
		return 2 * d * float64(spec.KV()*spec.QKHead())
	case Value:
		return 2 * d * float64(spec.KV()*spec.VHead())
	case MLPWi0, MLPWi1:
		return 2 * d * j.mlpWidth()
	case MLPWo:
		return j.routedTensorFLOPs(x)
	}
	return 0
}

// routedTensorFLOPs is the routed experts' share of tensorFLOPs(x): each
// of an MoE layer's routed GEMMs (wi_0, wi_1 and wo, whose output mlpwo
// is routed whole) is d_model × expert d_ff over the k routed rows a token
// (padded to the capacity factor where one is set: routedOutWidth, the
// same rows d_model wide), averaged over the layers as mlpWidth is. 0 for
// a dense model and for the attention's tensors.
func (j *Job) routedTensorFLOPs(x Tensor) float64 {
	spec := j.Model
	if !spec.MoE() {
		return 0
	}
	switch x {
	case MLPWi0, MLPWi1, MLPWo:
		return 2 * float64(spec.ExpertFF()) * j.routedOutWidth()
	}
	return 0
}

// routedWi1Width is the elements per token, averaged over the layers, of
// an MoE layer's routed wi_1 output that no policy can keep under the
// name mlpwi_1: MaxText's sparse_matmul (dropless) tags the routed
// experts' wi_0 output "mlpwi_0" and "moe_mlpwi_0" but their wi_1
// output only "moe_mlpwi_1" (layers/moe.py gmm_up, @e591f30c), so a
// policy that saves mlpwi_1 keeps only the dense and shared experts'
// part of it and the routed part is recomputed. dense_matmul (a
// capacity factor) tags both names: 0 there, and without a gated MLP
// or experts.
func (j *Job) routedWi1Width() float64 {
	spec := j.Model
	if !spec.MoE() || !spec.GatedMLP || j.CapacityFactor > 0 {
		return 0
	}
	return float64(spec.MoELayers()) / float64(spec.Layers) * float64(spec.ExpertsPerToken) * float64(spec.ExpertFF())
}

// redoneWi1 is the routed wi_1 output, in elements per token on all
// chips, that layer v recomputes although its policy saves mlpwi_1
// (routedWi1Width); 0 where the policy recomputes mlpwi_1 anyway, the
// model has none, or nothing is rematerialized.
func (j *Job) redoneWi1(v *layerView) float64 {
	if v.places[MLPWi1] == Recompute || !j.needed(MLPWi1) || j.Remat == RematNone {
		return 0
	}
	return j.routedWi1Width()
}

// keptWidth is what a policy that saves tagged tensor x keeps of it, in
// elements per token at tensor parallelism t: its width less, for
// mlpwi_1, the routed part it recomputes even so (redoneWi1). Without
// remat every residual is kept whole.
func (j *Job) keptWidth(v *layerView, x Tensor) float64 {
	if x == MLPWi1 {
		return v.widths[x] - j.redoneWi1(v)/float64(v.t)
	}
	return v.widths[x]
}

// blockUnit is the layers whose backward a chip holds at once under j's
// policy: a scanned block's (model.Spec.ScanBlock) where the policy
// chains them, else one (blockChained).
func (j *Job) blockUnit() int {
	if n := j.Model.BlockLayers(); n > 1 && j.blockChained() {
		return n
	}
	return 1
}

// blockMoELayers is the MoE layers of the unit blockUnit counts: its
// block's, or the one layer's.
func (j *Job) blockMoELayers() int {
	if !j.Model.MoE() {
		return 0
	}
	if j.blockUnit() == 1 {
		return 1
	}
	return j.Model.BlockMoELayers()
}

// blockChained reports whether the policy makes a scanned block's
// backward one unit. jax.checkpoint of the block (model/block.go) reruns
// what the policy does not keep; where each inner layer's input is kept,
// or rebuilt by sums alone from kept tensors, each layer's recompute
// reads only kept tensors, nothing orders the layers' recomputes before
// the block's first backward step, and XLA's scheduler may run each just
// before its own layer's backward, as with a layer a unit. That holds
// under the custom policy, whose decoder_layer_input defaults to device
// (base.yml line 216 @9ca35d7e, 361 @e591f30c; cost keeps it there:
// places), and under the policies that keep out_proj and the MLP's
// output, mlpwo, as dots (minimal, minimal_with_context,
// save_dot_except_mlpwi, minimal_offloaded), from which the next layer's
// input is the previous one plus both (JAX then keeps an inner layer's
// mlpwo, as wide as the input cost holds for each layer: rematIn);
// without remat nothing is rerun.
// Under the others (full, save_dot_except_mlp, save_qkv_proj,
// save_out_proj, qkv_proj_offloaded) no named tensor rebuilds an inner
// layer's input (they do not name decoder_layer_input:
// layers/decoders.py get_remat_policy and
// maxtext_utils.get_save_and_offload_names @e591f30c), so it is
// recomputed through the layers before it: the last layer's backward
// needs the whole block's forward first, which makes every earlier
// layer's recomputed activations and gathered weights live at it, and
// the scan carries only the block's input.
//
// Both ways out are the model's layers' names: custom's needs layers
// that tag decoder_layer_input (model.Spec.TagsLayerInput), the minimal
// family's layers that tag out_proj (model.Spec.TagsOutProj). Qwen 3.5's
// do neither (its Gated DeltaNet layers name nothing), so under every
// policy but none its block of 4 is the unit.
func (j *Job) blockChained() bool {
	switch j.Remat {
	case RematNone:
		return false
	case RematCustom:
		return !j.Model.TagsLayerInput()
	case RematMinimal, RematMinimalWithContext, RematSaveDotExceptMLPWi, RematMinimalOffloaded:
		return !j.Model.TagsOutProj()
	}
	return true
}

// needed reports whether the backward pass needs a tagged tensor other
// than the layer input (which the scan always keeps): a dense MLP's mlpwo
// feeds only the residual sum, whose gradient needs neither operand, and
// so does out_proj in a parallel block, where no norm reads the
// attention's output; a model without a gated MLP has no mlpwi_1. An MoE
// layer's mlpwo is its routed experts' output (routedOutWidth), which
// the combine multiplies by the router's weights, so the weights'
// gradient reads it (layers/moe.py unpermute's weight_sum einsum, and
// dense_matmul's combine einsum, @e591f30c): a policy that saves it keeps
// it. The Hunyuan3 author's AOT probe measures it: mlpwo=device adds
// 242.97 GB of temporaries a device, 79 MoE layers of [393,216 routed
// rows, 4,096] in bf16 being 254.4 GB (yangwhale/gpu-tpu-pedia
// tpu/Hunyuan3-295B-Pretraining/AOT-COMPILE.md @3fa9ce17).
func (j *Job) needed(x Tensor) bool {
	switch x {
	case LayerInput:
		return false
	case MLPWo:
		return j.Model.MoE()
	case OutProj:
		return !j.Model.ParallelBlock
	case MLPWi1:
		return j.Model.GatedMLP
	}
	return true
}

// remat is what a policy keeps and redoes per layer, per chip.
type remat struct {
	device, offload float64 // bytes per layer (a scanned block's per layer) kept in HBM and in host memory
	// recompute is the forward FLOPs per token and layer, all chips
	// together, of projections redone in the backward pass, routed the
	// routed experts' share of it; attention says whether the attention
	// core is redone too.
	recompute, routed float64
	attention         bool
}

// layerView is what a decoder layer looks like on one chip whatever its
// batch: each tagged tensor's place under the policy and its width with
// tensor parallelism t, and the projections the policy redoes. A search
// costs one job at many batches, so shapeOf works it out once per shape.
type layerView struct {
	t         int
	places    Places
	widths    [NumTensors]float64
	recompute float64 // remat.recompute
	routed    float64 // remat.routed
}

// layerAt is j's layer with tensor parallelism t.
func (j *Job) layerAt(t int) layerView {
	v := layerView{t: t, places: j.places(), widths: j.tensorWidths(t)}
	for x := LayerInput; x < NumTensors; x++ {
		if v.places[x] == Recompute && j.needed(x) {
			v.recompute += j.tensorFLOPs(x)
			v.routed += j.routedTensorFLOPs(x)
		}
	}
	wi1 := 2 * float64(j.Model.DModel) * j.redoneWi1(&v)
	v.recompute += wi1
	v.routed += wi1
	return v
}

// rematOf is the policy's per-layer footprint for b sequences of s local
// tokens attending over seq keys, with tensor parallelism t. Every policy
// but none recomputes the cheap elementwise work (norms, activation
// function, residual sums); none keeps their outputs too, and with
// dot-product attention the softmax probabilities.
func (j *Job) rematOf(b, s, seq, t int) remat {
	return j.rematIn(j.layerAt(t), b, s, seq)
}

// rematIn is rematOf on layer v.
func (j *Job) rematIn(v layerView, b, s, seq int) remat {
	e := float64(j.Precision.Activation)
	tokens := float64(b) * float64(s)
	r := remat{recompute: v.recompute, routed: v.routed}
	for x := LayerInput; x < NumTensors; x++ {
		bytes := e * tokens * j.keptWidth(&v, x)
		if x == LayerInput {
			bytes /= float64(j.blockUnit()) // the scan carries a block's input
		}
		switch v.places[x] {
		case Device:
			r.device += bytes
		case Offload:
			r.offload += bytes
		}
	}
	// The attention output is needed for the output projection's weight
	// gradient; unless it is kept, the attention core runs again.
	r.attention = v.places[Context] == Recompute
	if j.Remat == RematNone {
		r.device += j.elementwiseResiduals(b, s, seq, v.t)
	}
	return r
}

// elementwiseResiduals is what keeping every residual adds to the tagged
// tensors, per layer and chip: the two norms' outputs, the mid-layer
// residual sum (or, in its place, the output projection), the MLP's
// activation product, dropout masks when asked, with dot-product
// attention the softmax probabilities (b·heads·s·seq), and the fp32
// statistics (layerStats). Without the statistics, none is Korthikanti et
// al. 2022 (arXiv 2205.05198) Table 2's tensor+sequence parallel row for
// multi-head attention with a 4h GeLU MLP: s·b·h·(34 + 5·a·s/h)/t bytes.
func (j *Job) elementwiseResiduals(b, s, seq, t int) float64 {
	spec := j.Model
	e := float64(j.Precision.Activation)
	sb := float64(b) * float64(s)
	h := float64(spec.DModel) / float64(t)
	f := j.mlpWidth() / float64(t)
	extra := float64(spec.Norms()) * e * sb * h // norm outputs
	extra += e * sb * f                         // activation product (gated), or activation output
	if j.Dropout {
		extra += 2 * sb * h // 1-byte masks after the attention and the MLP
	}
	if j.Attention == AttentionDot {
		probs := e * float64(spec.Heads) * sb * float64(seq) / float64(t)
		if j.Dropout {
			probs += (1 + e) * float64(spec.Heads) * sb * float64(seq) / float64(t)
		}
		extra += probs
	}
	return extra + sb*j.layerStats(t)
}

// layerStats is the fp32 statistics a layer's backward pass reads, in
// bytes per local token: each norm's scale (one rsqrt per token for
// RMSNorm, the mean beside it for LayerNorm; MaxText normalizes in fp32,
// layers/normalizations.py) and, unless the attention is dot-product, the
// kernel's log-sum-exp per local head (a residual of the splash kernel's
// forward, jax.experimental.pallas.ops.tpu.splash_attention, and of
// FlashAttention-2's, Dao 2023 algorithm 1). Small beside a layer's
// activations (one or two values per token against d_model), they are
// what keeps a tiny model's count honest against the emulator's meter.
func (j *Job) layerStats(t int) float64 {
	spec := j.Model
	perNorm := 1.0
	if spec.LayerNorm {
		perNorm = 2
	}
	// the norms run sequence-parallel over tensor, as their outputs
	stats := float64(spec.Norms()) * perNorm / float64(t)
	if j.Attention != AttentionDot {
		stats += float64(spec.Heads) / float64(t)
	}
	return 4 * stats
}

// LayerActivations is the bytes one layer keeps on device for the backward
// pass, per chip, for b sequences of s local tokens attending over seq
// keys, with tensor parallelism t, under j's policy.
func (j Job) LayerActivations(b, s, seq, t int) float64 {
	return j.rematOf(b, s, seq, t).device
}
