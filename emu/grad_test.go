package emu

import (
	"math"
	"math/rand/v2"
	"testing"
)

func tinyConfig(tied bool) Config {
	return Config{Layers: 2, DModel: 8, Heads: 4, KVHeads: 2, DFF: 12, Vocab: 11, Seq: 6, Tied: tied}
}

func randomMicro(rng *rand.Rand, c Config, b int) micro {
	mb := micro{b: b, s: c.Seq, c: 1, scale: 1 / float64(b*c.Seq)}
	for range b * c.Seq {
		mb.tokens = append(mb.tokens, rng.IntN(c.Vocab))
		mb.targets = append(mb.targets, rng.IntN(c.Vocab))
	}
	return mb
}

// TestGradientsMatchFiniteDifferences checks every hand-written backward
// pass (embeddings, RMSNorm, grouped-query causal attention, SwiGLU, tied
// and untied output, cross-entropy) against central differences in
// float64, parameter by parameter.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, tied := range []bool{false, true} {
		c := tinyConfig(tied)
		p := newParams[float64](c, 3)
		// perturb the norms so their gradients are not trivially symmetric
		rng := rand.New(rand.NewPCG(9, 9))
		for _, l := range p.Layers {
			for i := range l.N1 {
				l.N1[i] += rng.NormFloat64() * 0.1
				l.N2[i] += rng.NormFloat64() * 0.1
			}
		}
		mb := randomMicro(rng, c, 2)
		worst := checkGradients(t, c, p, mb, 1e-5)
		t.Logf("tied=%v: worst |backward − finite difference| = %.3g", tied, worst)
	}
}

// checkGradients holds the hand-written backward pass of c on p for mb
// to central differences of step h, parameter by parameter (within
// 1e-7 + 1e-5 relative), and returns the worst difference.
func checkGradients(t *testing.T, c Config, p *Params[float64], mb micro, h float64) float64 {
	t.Helper()
	g := p.zeroLike()
	lossAndGrad(c, p, g, mb)
	params, grads := p.Tensors(), g.Tensors()
	worst := 0.0
	for ti := range params {
		for i := range params[ti] {
			old := params[ti][i]
			params[ti][i] = old + h
			up := lossOnly(c, p, mb)
			params[ti][i] = old - h
			down := lossOnly(c, p, mb)
			params[ti][i] = old
			fd := (up - down) / (2 * h)
			diff := math.Abs(fd - grads[ti][i])
			if diff > 1e-7+1e-5*math.Abs(fd) {
				t.Fatalf("tensor %d index %d: backward %.10g, finite difference %.10g", ti, i, grads[ti][i], fd)
			}
			worst = max(worst, diff)
		}
	}
	return worst
}
