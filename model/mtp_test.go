package model

import (
	"errors"
	"testing"
)

// The MTP module's decoder layer is the model's last layer as a one-layer
// model (MaxText models.py: layer_types[-1]): DeepSeek-V3's is an MoE
// layer; Llama 4 Maverick's last layer (47, from 0, with an MoE layer
// every second from layer 1) is MoE too, and with one layer fewer the
// last would be dense.
func TestMTPLayer(t *testing.T) {
	ds := catalogSpec(t, "deepseek3-671b")
	ds.MTPLayers = 1
	l := ds.MTPLayer()
	if l.Layers != 1 || l.MoELayers() != 1 || l.MTPLayers != 0 || l.Experts != 256 {
		t.Errorf("DeepSeek-V3's MTP layer: %d layers, %d MoE, %d experts, mtp %d; want 1, 1, 256, 0", l.Layers, l.MoELayers(), l.Experts, l.MTPLayers)
	}
	mv := Spec{Name: "moe-every-2", Layers: 48, DModel: 64, Heads: 4, DFF: 256, Vocab: 100, SeqLen: 128, Experts: 4, ExpertsPerToken: 1, MoEEvery: 2}
	if l := mv.MTPLayer(); !l.MoE() {
		t.Errorf("the MTP layer of %d layers with MoE every 2nd is dense, want MoE (the last layer is)", mv.Layers)
	}
	mv.Layers = 47
	if l := mv.MTPLayer(); l.MoE() || l.DFF != 256 {
		t.Errorf("the MTP layer of %d layers with MoE every 2nd: MoE %v, d_ff %d, want a dense layer of 256", mv.Layers, l.MoE(), l.DFF)
	}
	// the projection 2·7,168·7,168 and two norm scales of 7,168
	if got, want := ds.MTPProjection(), int64(102_774_784); got != want {
		t.Errorf("MTPProjection = %d, want %d", got, want)
	}
}

func TestValidateMTPLayers(t *testing.T) {
	base := Spec{Name: "m", Layers: 4, DModel: 64, Heads: 4, DFF: 256, Vocab: 100, SeqLen: 128}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		ok   bool
	}{
		{"one", func(s *Spec) { s.MTPLayers = 1 }, true},
		{"negative", func(s *Spec) { s.MTPLayers = -1 }, false},
		{"more than layers", func(s *Spec) { s.MTPLayers = 5 }, false},
		{"local attention", func(s *Spec) { s.MTPLayers, s.SlidingWindow, s.GlobalAttentionEvery = 1, 16, 2 }, false},
	} {
		s := base
		tc.edit(&s)
		err := s.Validate()
		var fe *FieldError
		if tc.ok && err != nil || !tc.ok && (!errors.As(err, &fe) || fe.Field != "mtp_layers") {
			t.Errorf("%s: Validate() = %v, want ok %v (a mtp_layers FieldError otherwise)", tc.name, err, tc.ok)
		}
	}
}

// A module's FLOPs, by hand, for a dense GQA model: d_model 2048, 16
// heads of 128, 4 KV heads, gated d_ff 5632, vocabulary 32000. Its decoder
// layer's matmuls: Q and O 2·2048² = 8,388,608, K and V 2·2048·512 =
// 2,097,152, the MLP 3·2048·5632 = 34,603,008: 45,088,768. It runs the
// output layer again, 32000·2048 = 65,536,000, and its projection
// 2·2048² = 8,388,608: 119,013,376 matmul parameters a token uses. MaxText
// counts the layer alone (maxtext_utils.py @e591f30c): 6·45,088,768 =
// 270,532,608 FLOPs, plus its attention, 12·16·128·2048 = 50,331,648 at
// seq 2048 (25,165,824 causal): 320,864,256, or 295,698,432 causal.
func TestMTPFLOPsByHand(t *testing.T) {
	s := Spec{Name: "m", Layers: 8, DModel: 2048, Heads: 16, KVHeads: 4, HeadDim: 128, DFF: 5632, Vocab: 32000, SeqLen: 2048, GatedMLP: true}
	if s.MTPMatmulParams() != 0 || s.MTPFLOPsPerToken(2048, false) != 0 {
		t.Errorf("without MTP: %d parameters, %g FLOPs; want 0", s.MTPMatmulParams(), s.MTPFLOPsPerToken(2048, false))
	}
	base := s.FLOPsPerToken(2048, true)
	s.MTPLayers = 2
	if got, want := s.MTPMatmulParams(), int64(2*119_013_376); got != want {
		t.Errorf("MTPMatmulParams = %d, want %d", got, want)
	}
	if got, want := s.MTPFLOPsPerToken(2048, false), 2*320_864_256.0; got != want {
		t.Errorf("MTPFLOPsPerToken(full) = %.0f, want %.0f", got, want)
	}
	if got, want := s.MTPFLOPsPerToken(2048, true), 2*295_698_432.0; got != want {
		t.Errorf("MTPFLOPsPerToken(causal) = %.0f, want %.0f", got, want)
	}
	if got, want := s.FLOPsPerToken(2048, true)-base, 2*295_698_432.0; got != want {
		t.Errorf("FLOPsPerToken grows by %.0f with two modules, want %.0f", got, want)
	}
}
