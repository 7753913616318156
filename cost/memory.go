package cost

import "shardlab/unit"

// Buffer is one short-lived buffer of a phase of a step, per chip.
type Buffer struct {
	Name  string     `json:"name"`
	Bytes unit.Bytes `json:"bytes"`
}

// Phase is a part of a step whose short-lived buffers are live at the same
// time, on top of the model state and the activations held for the
// backward pass. The step's peak is the state, the held activations and
// its largest phase.
type Phase struct {
	Name    string   `json:"name"`
	Buffers []Buffer `json:"buffers"`
}

// Bytes is the phase's buffers together.
func (p Phase) Bytes() unit.Bytes {
	var n unit.Bytes
	for _, b := range p.Buffers {
		n += b.Bytes
	}
	return n
}

// The phases.
const (
	PhaseLayerBackward = "layer backward"
	PhaseOutput        = "output layer and loss"
)

// phases lists the short-lived buffers of the two phases of a step that
// do not overlap, per chip.
//
// The backward pass of a layer. jax.checkpoint (MaxText wraps each decoder
// layer in it, layers/decoders.py get_remat_policy) reruns the layer's
// forward before its backward, so what the policy does not keep is
// recomputed into HBM at once, the attention core's probabilities too when
// dot_product attention materialises them (layers/attention_op.py
// apply_attention_dot and compute_local_attention @e591f30c: the scores
// and their exponentials are [b, heads, q, kv] arrays of the activation
// dtype; the exponentials are what the backward pass reads). Then the
// weights: with FSDP, XLA
// gathers each weight matrix separately and its latency-hiding scheduler
// starts a gather only as far ahead as memory allows, so what must be
// resident is three of the layer's largest matrices in the compute dtype:
// the one in use, its unreduced gradient on the way to the reduce-scatter,
// and the next one gathered ahead (never more than two layers). Without
// FSDP but with fp32 weights: the bf16 copy of the layer in use. An MoE
// layer adds its dispatch buffers (expertBuffers) and the ring of experts
// its gathered tokens (ringBuffers).
//
// The output layer and loss, on the stage that has it: the logits of the
// micro-batches held (one, or all of the last stage's where every forward
// precedes the backward) and one's gradients in the compute dtype (XLA
// fuses the fp32 softmax and loss row by row), split over the vocabulary
// tiles (MaxText num_vocab_tiling), and with FSDP the output layer's
// gathered weights and unreduced gradients.
func (j Job) phases(sh shape, st stage, r remat, logits float64) []Phase {
	e := float64(j.Precision.Activation)
	var back Phase
	add := func(ph *Phase, name string, bytes float64) {
		if bytes > 0 {
			ph.Buffers = append(ph.Buffers, Buffer{Name: name, Bytes: unit.Bytes(bytes)})
		}
	}
	if j.Remat != RematNone {
		all := j
		all.Remat = RematNone
		add(&back, "recomputed activations", all.rematOf(sh.b, sh.s, j.Seq, sh.t).device-r.device)
	}
	add(&back, "MoE dispatch", j.expertBuffers(sh.b, sh.s))
	add(&back, "ring of experts", j.ringBuffers(sh.e, sh.b*sh.s))
	layer := float64(j.Model.ParamCount().PerLayer()) / float64(sh.t)
	switch {
	case sh.f*sh.e > 1:
		add(&back, "gathered weights and unreduced gradients (FSDP)", min(3*float64(j.Model.LargestMatrix())/float64(sh.t), 2*layer)*e)
	case j.Precision.Weight > j.Precision.Activation || j.ParameterOffload:
		add(&back, "compute-dtype copy of the layer's weights", layer*e)
	}
	phases := []Phase{back}
	if sh.p == 1 || st == lastStage {
		out := Phase{Name: PhaseOutput}
		tiles := float64(max(j.VocabTiles, 1))
		row := float64(sh.b) * float64(sh.s) * float64(j.Model.Vocab) * e / float64(sh.t) / tiles
		add(&out, "logits", logits*row)
		add(&out, "logits gradient", row)
		if sh.f > 1 {
			add(&out, "gathered output layer and its unreduced gradient (FSDP)", 2*float64(j.Model.Vocab)*float64(j.Model.DModel)/float64(sh.t)*e)
		}
		phases = append(phases, out)
	}
	phases[0].Name = PhaseLayerBackward
	return phases
}
