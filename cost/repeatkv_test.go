package cost

import (
	"strings"
	"testing"
)

// pyTorchLlama8B is Llama 3 8B as a PyTorch/XLA job under AMP (4-byte
// activations) at fsdp=4 on v5p-8 (one device a chip, tensor 1), 8
// sequences of 8,192: 2 sequences, 16,384 tokens, a chip; flash
// attention; remat r, the keys and values repeated to the query's heads
// or not.
func pyTorchLlama8B(t *testing.T, r Remat, repeat bool) Memory {
	t.Helper()
	j := NewJob(lookup(t, "llama3-8b"), 8192, 8)
	j.Remat, j.Attention, j.Precision, j.RepeatKV = r, AttentionFlash, AMPPrecision(), repeat
	mem, err := NewEstimator().Memory(j, layout(t, "v5p-8", 1, "fsdp=4"))
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// TestRepeatKVByHand holds the repeated keys and values of a PyTorch/XLA
// job (Settings.RepeatKV: the export's xla_flash_attention casts q, k and
// v to autocast's bf16, then repeats K and V before torch_xla's
// flash_attention, whose FlashAttention.forward saves the q, k and v it
// gets, custom_kernel.py 795-823 @41398bff) to a hand count on Llama 3 8B
// (d_model 4,096, d_ff 14,336, 32 query and 8 KV heads of 128; 32
// layers), 16,384 tokens a chip, AMP's other activations at 4 bytes:
//
// Unrepeated, K and V are 2 × 1,024 elements a token at 4 B, 8,192 B;
// repeated, 2 × 4,096 at 2 B, 16,384 B: 8,192 B more a token, × 16,384 =
// 134,217,728 B a layer (review 166 #5: 32 × 4,096 × 2 × 2 B × 16,384 held
// a chip, against 32 × 1,024 × 2 × 4 B × 16,384 unrepeated).
//
// Remat none keeps them in every layer: 32 × 134,217,728 =
// 4,294,967,296 B more held. Its layer backward peaks at the MLP's
// up-projections, d(out) 4,096 + d(wi_0), d(wi_1) 28,672 + d(normed)
// 4,096 = 36,864 elements a token of gradients (2,415,919,104 B) and no
// recompute, with or without the repeat: the attention core's gradients,
// d(h), d(context) and dQ, dK, dV, are at most 4,096 + 4,096 + 4,096 +
// 2 × 4,096 = 20,480 elements repeated.
//
// Remat full (checkpoint_module) holds only the layers' inputs, the same
// either way, and its layer backward peaks at the MLP's down-projection,
// where everything the recompute made is live: Q 4,096, K and V 2 × 1,024
// (repeated, 2 × 4,096 at 2 B: 4,096 four-byte elements), context 4,096,
// out_proj 4,096, wi_0 and wi_1 2 × 14,336, the input norm's and the
// mid-layer norm's outputs 2 × 4,096, the activation product 14,336 and
// the statistics (2 norms + 32 heads) × 4 B / 4 B = 34 elements: 65,570
// (67,618 repeated) four-byte elements a token, 4,297,195,520 B
// (4,431,413,248 repeated), beside d(out) + d(act) = 18,432 elements,
// 1,207,959,552 B, of gradients.
func TestRepeatKVByHand(t *testing.T) {
	const perLayer = (2*4096*2 - 2*1024*4) * 16384
	if perLayer != 134_217_728 {
		t.Fatalf("per layer %d", perLayer)
	}
	none, noneRep := pyTorchLlama8B(t, RematNone, false), pyTorchLlama8B(t, RematNone, true)
	if got := noneRep.Activations - none.Activations; got != 32*perLayer {
		t.Errorf("remat none: repeated K and V hold %d B more, want 32 x %d = %d", got, perLayer, 32*perLayer)
	}
	full, fullRep := pyTorchLlama8B(t, RematFull, false), pyTorchLlama8B(t, RematFull, true)
	if fullRep.Activations != full.Activations {
		t.Errorf("remat full: held %v repeated, %v not: want the layer inputs alone, the same", fullRep.Activations, full.Activations)
	}
	for _, c := range []struct {
		name                 string
		mem                  Memory
		step                 string
		residuals, gradients int64
	}{
		{"none", none, "MLP up-projections", 0, 2_415_919_104},
		{"none repeated", noneRep, "MLP up-projections", 0, 2_415_919_104},
		{"full", full, "MLP down-projection", 4_297_195_520, 1_207_959_552},
		{"full repeated", fullRep, "MLP down-projection", 4_431_413_248, 1_207_959_552},
	} {
		if !strings.Contains(layerPhaseName(t, c.mem), "("+c.step+")") {
			t.Errorf("%s: layer backward %q, want it to peak at the %s", c.name, layerPhaseName(t, c.mem), c.step)
		}
		res, grads := layerBuffer(t, c.mem, "recomputed activations still live"), layerBuffer(t, c.mem, BufferActivationGradients)
		if int64(res) != c.residuals || int64(grads) != c.gradients {
			t.Errorf("%s: layer backward recomputed %d B, gradients %d B; want %d and %d", c.name, res, grads, c.residuals, c.gradients)
		}
	}
}

// layerPhaseName is the layer backward phase's name, with its step.
func layerPhaseName(t *testing.T, mem Memory) string {
	t.Helper()
	for _, p := range mem.Phases {
		if strings.HasPrefix(p.Name, PhaseLayerBackward) {
			return p.Name
		}
	}
	t.Fatalf("no %s phase in %v", PhaseLayerBackward, mem.Phases)
	return ""
}

// TestRepeatKVNeedsGQA: with as many KV heads as query heads (Llama 2
// 7B's 32 and 32) repeating changes nothing.
func TestRepeatKVNeedsGQA(t *testing.T) {
	for _, r := range []Remat{RematNone, RematFull} {
		var got [2]Memory
		for i, rep := range []bool{false, true} {
			j := NewJob(lookup(t, "llama2-7b"), 4096, 8)
			j.Remat, j.Precision, j.RepeatKV = r, AMPPrecision(), rep
			m, err := NewEstimator().Memory(j, layout(t, "v5p-8", 1, "fsdp=4"))
			if err != nil {
				t.Fatal(err)
			}
			got[i] = m
		}
		if got[0].Total() != got[1].Total() {
			t.Errorf("llama2-7b remat %s: %v repeated, %v not; want the same (MHA)", r, got[1].Total(), got[0].Total())
		}
	}
}
