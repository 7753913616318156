package cost

// Multi-token prediction (model.Spec.MTPLayers; DeepSeek-AI 2024, arXiv
// 2412.19437 §2.2), as MaxText trains it (src/maxtext/layers/
// multi_token_prediction.py @e591f30c, cited below as mtp.py): after the
// decoder's last layer, each module normalizes the embedding of the token
// one further on and the previous hidden state, concatenates them,
// projects them back to d_model (MultiTokenPredictionLayer.__call__), runs
// its own decoder layer of the model's last layer type (model.Spec.
// MTPLayer) and the shared output layer (MultiTokenPredictionBlock.
// __call__: decoder.apply_output_head), and adds a cross-entropy to the
// loss (_cross_entropy_with_integer_labels). The decoder layer is the
// bare class (models/models.py unwraps the Linen wrapper), not the
// scanned layers' jax.checkpoint, so nothing of it is recomputed: its
// forward's residuals stay in HBM until its backward, which runs before
// the decoder's, with the losses' gradients.

// mtpLayerJob is j with the model replaced by its MTP module's decoder
// layer and no remat.
func (j *Job) mtpLayerJob() Job {
	l := *j
	l.Model = j.Model.MTPLayer()
	l.Remat, l.Custom = RematNone, Places{}
	return l
}

// mtpParams is the parameters of the MTP modules on a chip of the stage
// that holds the output layer: each one's decoder layer sharded as the
// model's layers are (stageParams) and its projection (model.Spec.
// MTPProjection: kernel_axes ("embed", None), the embed dimension over
// fsdp, context and expert: weightShards; the norms' scales with it, a
// rounding error). Zero without MTP.
func (j *Job) mtpParams(sh *shape) float64 {
	n := float64(j.Model.MTPLayers)
	if n == 0 {
		return 0
	}
	l := j.mtpLayerJob()
	layer, routed := denseLayerParams(l.Model, sh.t), 0.0
	if l.Model.MoE() {
		layer, routed = l.moeLayerParams(sh), l.routedPerLayer(sh)/float64(sh.c)
	}
	return n * ((layer+float64(j.Model.MTPProjection()))/float64(sh.weightShards()*sh.e) + routed)
}

// mtpHeld is what one MTP module holds on a chip from its forward to its
// backward for b sequences of s local tokens: its decoder layer's
// residuals without remat (rematOf under RematNone: the layer's input,
// which is the projection's output, the tagged projections, an MoE
// layer's routed output as mlpwo, and the elementwise residuals), an MoE
// layer's dispatched rows (dispatchBuffers: the sorted inputs the
// up-projections' weight gradients read, layers/moe.py permute; the
// experts' outputs, which the combine's router-weight gradient reads,
// are the mlpwo kept) and the concatenation the
// projection's weight gradient reads, [tokens, 2·d_model], in the
// activation dtype, split over tensor as the residual stream is. Zero
// without MTP.
func (j *Job) mtpHeld(sh *shape) float64 {
	if j.Model.MTPLayers == 0 {
		return 0
	}
	l := j.mtpLayerJob()
	tok := float64(sh.b) * float64(sh.s)
	concat := 2 * float64(j.Model.DModel) / float64(sh.t) * tok * float64(j.Precision.Activation)
	v := l.layerAt(sh.t)
	return l.rematIn(v, sh.b, sh.s, j.Seq).device + l.dispatchBuffers(&v, sh.b, sh.s) + concat
}
