package emu

import (
	"sync"
	"testing"

	"shardlab/collective"
)

// BenchmarkAllReduce measures in-process all-reduce algorithm bandwidth
// (bytes reduced per second) next to a plain copy() of the same bytes, in
// the same run.
func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{2, 8} {
		for _, mib := range []int{1, 64} {
			elems := mib << 20 / 4
			b.Run(itoa(n)+"-devices/"+itoa(mib)+"MiB", func(b *testing.B) {
				f := NewFabric(make([]int, n))
				g := collective.Group{NICI: n, NDCN: 1, ICILink: collective.Link{Bandwidth: 1e11}}
				for i := range n {
					g.Ranks = append(g.Ranks, i)
				}
				bufs := make([][]float32, n)
				for i := range bufs {
					bufs[i] = make([]float32, elems)
					for j := range bufs[i] { // touch the pages before timing
						bufs[i][j] = 1
					}
				}
				for b.Loop() {
					var wg sync.WaitGroup
					for i := range n {
						wg.Add(1)
						go func() {
							defer wg.Done()
							f.Endpoint(i).AllReduce(g, bufs[i])
						}()
					}
					wg.Wait()
				}
				b.ReportMetric(float64(elems*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "algGB/s")
			})
		}
	}
	for _, mib := range []int{1, 64} {
		b.Run("copy/"+itoa(mib)+"MiB", func(b *testing.B) {
			src := make([]float32, mib<<20/4)
			dst := make([]float32, len(src))
			copy(dst, src) // touch the pages before timing
			for b.Loop() {
				copy(dst, src)
			}
			b.ReportMetric(float64(len(src)*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "algGB/s")
		})
	}
}

// BenchmarkTrain reports training tokens/s for a fixed model on 8 virtual
// chips (data=2(dcn), fsdp=2, tensor=2).
func BenchmarkTrain(b *testing.B) {
	m := testMesh(b, "v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2")
	c := Config{Layers: 4, DModel: 64, Heads: 4, KVHeads: 2, DFF: 176, Vocab: 256, Seq: 64}
	tc := TrainConfig{Model: c, Mesh: m, GlobalBatch: 16, MicroBatches: 1, Steps: 2, Seed: 1, LR: 1e-3, Data: &Synthetic{V: 256, Seed: 1}}
	for b.Loop() {
		if _, err := Train(tc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tc.Steps*tc.GlobalBatch*c.Seq)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkTrain100M is one step of a ~100M-parameter model (12 layers,
// d_model 768) on 8 FSDP chips; run it alone with -benchtime 1x.
func BenchmarkTrain100M(b *testing.B) {
	m := testMesh(b, "v5litepod-8", 1, "fsdp=8")
	c := Config{Layers: 12, DModel: 768, Heads: 12, KVHeads: 12, DFF: 3072, Vocab: 256, Seq: 128}
	tc := TrainConfig{Model: c, Mesh: m, GlobalBatch: 8, MicroBatches: 1, Steps: 1, Seed: 1, LR: 1e-4, Data: &Synthetic{V: 256, Seed: 1}}
	var params int
	for b.Loop() {
		r, err := Train(tc)
		if err != nil {
			b.Fatal(err)
		}
		params = 0
		for _, t := range r.Final.Tensors() {
			params += len(t)
		}
	}
	b.ReportMetric(float64(params)/1e6, "Mparams")
	b.ReportMetric(float64(tc.Steps*tc.GlobalBatch*c.Seq)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
