package kernel

import "testing"

// BenchmarkPeak reports one core's fp32 peak measured by the FMA loops,
// 256-bit and 512-bit.
func BenchmarkPeak(b *testing.B) {
	for _, p := range []struct {
		name string
		f    func(int) float64
	}{{"avx2", PeakAVX2}, {"avx512", PeakAVX512}} {
		b.Run(p.name, func(b *testing.B) {
			var flops float64
			for b.Loop() {
				flops += p.f(1 << 20)
			}
			if flops == 0 {
				b.Skip("not on this CPU or build")
			}
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
