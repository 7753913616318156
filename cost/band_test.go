package cost

import (
	"math"
	"testing"

	"shardlab/hw"
	"shardlab/model"
)

// TestBandFallback checks the order in which a job's band falls back
// when its cell has fewer than BandMinRows rows, on a table of its own.
func TestBandFallback(t *testing.T) {
	table := []StepBand{
		{Class: "", Low: -0.1, High: 0.1, Rows: 40},
		{Class: ClassDense, Low: -0.08, High: 0.09, Rows: 30},
		{Class: ClassMoE, Low: -0.03, High: 0.3, Rows: 5},
		{Class: ClassQuantized, Low: 0, High: 0.07, Rows: 9},
		{Generation: hw.V5e, Class: ClassDense, Low: -0.07, High: 0.03, Rows: 12},
		{Generation: hw.TPU7x, Class: ClassDense, Low: -0.01, High: 0.08, Rows: 6},
	}
	dense := Job{Model: model.Spec{Name: "d"}}
	moe := Job{Model: model.Spec{Name: "m", Experts: 8, ExpertsPerToken: 2}}
	fp8 := dense
	fp8.Quantization = QuantFP8
	for _, c := range []struct {
		name string
		j    Job
		g    hw.Generation
		want StepBand
	}{
		{"dense v5e: its own cell", dense, hw.V5e, table[4]},
		{"dense tpu7x: 6 rows, so dense of every generation", dense, hw.TPU7x, table[1]},
		{"dense v4: no cell, so dense of every generation", dense, hw.V4, table[1]},
		{"MoE: 5 rows, so every row", moe, hw.V5p, table[0]},
		{"fp8 tpu7x: quantized of every generation", fp8, hw.TPU7x, table[3]},
	} {
		if got := c.j.BandIn(table, c.g); got != c.want {
			t.Errorf("%s: BandIn(table, %s) = %+v, want %+v", c.name, c.g, got, c.want)
		}
	}
}

// TestBandScales checks the band of a step and of a rate by hand: a
// predicted MFU 10 % too high means the real step is 1.1 times the
// predicted one and the real rate the predicted one over 1.1.
func TestBandScales(t *testing.T) {
	b := StepBand{Low: -0.05, High: 0.1}
	if lo, hi := b.Step(2); math.Abs(lo-1.9) > 1e-12 || math.Abs(hi-2.2) > 1e-12 {
		t.Errorf("Step(2) = %v, %v, want 1.9, 2.2", lo, hi)
	}
	if lo, hi := b.Rate(1.1); math.Abs(lo-1) > 1e-12 || math.Abs(hi-1.1/0.95) > 1e-12 {
		t.Errorf("Rate(1.1) = %v, %v, want 1, %v", lo, hi, 1.1/0.95)
	}
	if got, want := b.Width(), 1.1/0.95-1; math.Abs(got-want) > 1e-12 {
		t.Errorf("Width() = %v, want %v", got, want)
	}
}

// An MoE job whose routed experts stay in bf16 (int8, or a capacity
// factor) takes its model class's band, not the quantized one, whose rows
// quantize their experts; an fp8 dropless MoE job takes the quantized
// band.
func TestBandOfUnquantizedExperts(t *testing.T) {
	table := []StepBand{
		{Class: ClassQuantized, Low: -0.01, High: 0.01, Rows: BandMinRows},
		{Class: ClassMoE, Low: -0.2, High: 0.2, Rows: BandMinRows},
	}
	for _, tt := range []struct {
		q    Quantization
		cf   float64
		want ModelClass
	}{
		{QuantFP8, 0, ClassQuantized},
		{QuantInt8, 0, ClassMoE},
		{QuantFP8, 1.25, ClassMoE},
		{QuantNone, 0, ClassMoE},
	} {
		j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
		j.Quantization, j.CapacityFactor = tt.q, tt.cf
		if got := j.BandIn(table, hw.V5p); got.Class != tt.want {
			t.Errorf("%s, capacity factor %v: the %s band, want %s", tt.q, tt.cf, got.Class, tt.want)
		}
	}
}
