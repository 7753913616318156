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
	ds, ok := Lookup("deepseek3-671b")
	if !ok {
		t.Fatal("no deepseek3-671b")
	}
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
