package cost

import (
	"math"
	"testing"
)

// DeepSeek-V3 with its one MTP module (arXiv 2412.19437 §2.2) on v5p-512
// at fsdp=256: the module's parameters a chip holds, by hand. Its
// decoder layer is an MoE layer like the model's last: 256 routed
// experts of 3·7,168·2,048 = 44,040,192 (11,274,289,152), one shared
// expert (44,040,192), the router 7,168·256 (1,835,008), latent
// attention (wq_a 7,168·1,536 + wq_b 1,536·128·192 + wkv_a 7,168·576 +
// wkv_b 512·128·256 + wo 128·128·7,168, and the two latents' norm
// scales 1,536 + 512: 187,107,328) and the layer's two norms (14,336);
// beside it the projection 2·7,168·7,168 (102,760,448) and two norms
// (14,336). All of it over fsdp 256: 11,610,060,800 / 256 = 45,351,800.
func TestMTPParamsByHand(t *testing.T) {
	spec := lookup(t, "deepseek3-671b")
	spec.MTPLayers = 1
	j := NewJob(spec, 4096, 256)
	sh, err := shapeOf(j, layout(t, "v5p-512", 1, "fsdp=256"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := j.mtpParams(&sh), 45_351_800.0; got != want {
		t.Errorf("MTP parameters per chip = %.0f, want %.0f", got, want)
	}
	without := j
	without.Model.MTPLayers = 0
	if got, want := j.stageParams(&sh, lastStage, endsSplit)-without.stageParams(&sh, lastStage, endsSplit), 45_351_800.0; got != want {
		t.Errorf("MTP adds %.0f parameters to the last stage's chip, want %.0f", got, want)
	}
}

// Mixtral 8x7B with one MTP module, dropless, flash attention, one
// 4,096-token sequence per chip at fsdp=256, tensor 1: the module's
// decoder layer keeps every residual (no jax.checkpoint), per token in
// bf16 elements: its input 4,096, Q 4,096, K and V 1,024 each, the
// attention output 4,096 and the out-projection's 4,096, wi_0 and wi_1
// of the 2 routed experts 2·14,336 each, the experts' output (mlpwo)
// 2·4,096, the two norms' outputs 8,192 and the activation product
// 28,672: 120,832 elements, 241,664 bytes; the fp32 statistics 4·(2
// norms + 32 heads' log-sum-exp) = 136 bytes; the dispatched rows
// 2·4,096 elements, 16,384 bytes; the concatenation 2·4,096 elements, 16,384 bytes. 274,568 bytes a
// token, 1,124,630,528 for 4,096 tokens. Its logits are whole even with
// vocabulary tiling: 4,096·32,000·2 = 262,144,000 bytes.
func TestMTPResidualsByHand(t *testing.T) {
	spec := lookup(t, "mixtral-8x7b")
	spec.MTPLayers = 1
	j := NewJob(spec, 4096, 256)
	j.Attention, j.CapacityFactor, j.VocabTiles = AttentionFlash, 0, 4
	m := layout(t, "v5p-512", 1, "fsdp=256")
	sh, err := shapeOf(j, m)
	if err != nil {
		t.Fatal(err)
	}
	if sh.b != 1 || sh.s != 4096 || sh.t != 1 {
		t.Fatalf("shape b %d s %d t %d, want 1, 4096, 1", sh.b, sh.s, sh.t)
	}
	if got, want := j.mtpHeld(&sh), 1_124_630_528.0; got != want {
		t.Errorf("MTP layer residuals = %.0f bytes, want %.0f", got, want)
	}
	mem, err := NewEstimator().Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"MTP logits": 262_144_000, "logits": 65_536_000, "MTP layers' residuals (no remat)": 1_124_630_528}
	for _, b := range mem.Phases[len(mem.Phases)-1].Buffers {
		if w, ok := want[b.Name]; ok {
			if int64(b.Bytes) != w {
				t.Errorf("%s: %d bytes, want %d", b.Name, b.Bytes, w)
			}
			delete(want, b.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("the output phase lacks %v", want)
	}
	j.Model.MTPLayers = 0
	if got := j.mtpHeld(&sh) + j.mtpParams(&sh); got != 0 {
		t.Errorf("without MTP: %.0f, want 0", got)
	}
}

// A step pays the MTP module's work (cost computeFLOPs): Llama 3 8B with
// one module, seq 4096, flash attention, 16 sequences. By hand, per token:
// the module's decoder layer's matmuls (Q and O 2·4096², K and V
// 2·4096·1024, the MLP 3·4096·14336: 218,103,808), the output layer run
// again (128256·4096 = 525,336,576) and the projection (2·4096² =
// 33,554,432), 6 FLOPs each forward and backward: 4,661,968,896; its
// attention core 4·4096·4096 = 67,108,864 forward, halved by the causal
// kernel, three times: 100,663,296. No remat recomputes any of it.
// Model FLOPs grow by MaxText's count, the layer alone:
// 6·218,103,808 + 3·67,108,864/2 = 1,409,286,144 a token.
func TestMTPStepFLOPsByHand(t *testing.T) {
	spec := lookup(t, "llama3-8b")
	m := layout(t, "v5p-8", 1, "fsdp=4")
	step := func(mtp int) *Estimate {
		t.Helper()
		s := spec
		s.MTPLayers = mtp
		j := NewJob(s, 4096, 16)
		j.Remat, j.Attention, j.CausalFLOPs = RematFull, AttentionFlash, true
		est, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return &est
	}
	without, with := step(0), step(1)
	tokens := 16.0 * 4096
	if got, want := float64(with.HardwareFLOPs-without.HardwareFLOPs)/tokens, 4_661_968_896.0+100_663_296; math.Abs(got-want) > 1 {
		t.Errorf("the module adds %.0f hardware FLOPs a token, want %.0f", got, want)
	}
	if got, want := float64(with.ModelFLOPs-without.ModelFLOPs)/tokens, 1_409_286_144.0; math.Abs(got-want) > 1 {
		t.Errorf("the module adds %.0f model FLOPs a token, want %.0f", got, want)
	}
	if with.Time.MXU <= without.Time.MXU || with.Time.Attention <= without.Time.Attention {
		t.Errorf("MXU %v and attention %v with the module, %v and %v without: want both longer", with.Time.MXU, with.Time.Attention, without.Time.MXU, without.Time.Attention)
	}
}
