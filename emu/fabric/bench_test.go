package fabric

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"shardlab/collective"
	"shardlab/emu/kernel"
)

// BenchmarkAllReduce measures in-process all-reduce algorithm bandwidth
// (bytes reduced per second) and, in each iteration and so under the same
// load, the v1 all-reduce (the scalar add) and a plain copy() of the same
// bytes on one core. It reports the ratios to both. A single copy() of
// 64 MiB here varies up to twofold from one call to the next, so the
// baseline is the best of three (one before the all-reduce, two
// after v1's): the fastest copy() of the iteration, the strictest
// comparison. traffic-%-copy is the memory the all-reduce reads and
// writes a second (every buffer read and written once, n times a copy()'s
// bytes, the least an in-place all-reduce can move) as a percentage of
// copy()'s. %-bare-kernel compares it with the same sums done by the
// bare kernel (bareKernel): what the memory system gives those sums
// without the fabric.
func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{2, 8} {
		for _, mib := range []int{1, 64} {
			elems := mib << 20 / 4
			b.Run(strconv.Itoa(n)+"-devices/"+strconv.Itoa(mib)+"MiB", func(b *testing.B) {
				now, v1 := newAllReduce(n, elems), newAllReduce(n, elems)
				v1.f.add, v1.f.v1 = addScalar, true
				src := make([]float32, elems)
				dst := make([]float32, elems)
				for i := range src { // pages of their own: never written, they would all map the kernel's zero page
					src[i] = 1
				}
				copy(dst, src) // touch the pages before timing
				copyTime := func() time.Duration {
					t0 := time.Now()
					copy(dst, src)
					return time.Since(t0)
				}
				var tNow, tV1, tCopy, tKernel time.Duration
				for b.Loop() {
					b.StopTimer()
					before := copyTime()
					b.StartTimer()
					tNow += now.run()
					b.StopTimer()
					tV1 += v1.run()
					tCopy += min(before, copyTime(), copyTime())
					tKernel += now.bareKernel()
					b.StartTimer()
				}
				gbps := float64(elems*4) * float64(b.N) / tNow.Seconds() / 1e9
				b.ReportMetric(gbps, "algGB/s")
				b.ReportMetric(tV1.Seconds()/tNow.Seconds(), "x-v1")
				b.ReportMetric(100*tCopy.Seconds()/tNow.Seconds(), "%-copy")
				b.ReportMetric(float64(n)*100*tCopy.Seconds()/tNow.Seconds(), "traffic-%-copy")
				b.ReportMetric(100*tKernel.Seconds()/tNow.Seconds(), "%-bare-kernel")
				b.ReportMetric(100*tCopy.Seconds()/tKernel.Seconds(), "bare-kernel-%-copy")
			})
		}
	}
}

// allReduceRun is an all-reduce of n devices' buffers on a fabric.
type allReduceRun struct {
	f    *Fabric
	g    collective.Group
	bufs [][]float32
}

func newAllReduce(n, elems int) *allReduceRun {
	r := &allReduceRun{f: New(make([]int, n)), g: collective.Group{NICI: n, NDCN: 1, ICILink: collective.Link{Bandwidth: 1e11}}}
	for i := range n {
		r.g.Ranks = append(r.g.Ranks, i)
		buf := make([]float32, elems)
		for j := range buf { // touch the pages before timing
			buf[j] = 1
		}
		r.bufs = append(r.bufs, buf)
	}
	return r
}

// bareKernel sums the buffers in place with the bare kernel, each of
// GOMAXPROCS goroutines taking an equal range of every buffer in one
// kernel.ReduceFan (the one-pass sum the direct all-reduce runs, without
// its fabric: no messages, no waiting), and returns the wall time.
func (r *allReduceRun) bareKernel() time.Duration {
	t0 := time.Now()
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			l := len(r.bufs[0])
			lo, hi := w*l/workers, (w+1)*l/workers
			part := make([][]float32, len(r.bufs))
			for k, buf := range r.bufs {
				part[k] = buf[lo:hi]
			}
			kernel.ReduceFan(part, part)
		})
	}
	wg.Wait()
	return time.Since(t0)
}

// run all-reduces the buffers, one goroutine a device, and returns the
// wall time.
func (r *allReduceRun) run() time.Duration {
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range r.bufs {
		wg.Go(func() { r.f.Endpoint(i).AllReduce(r.g, r.bufs[i]) })
	}
	wg.Wait()
	return time.Since(t0)
}

// addScalar is v1's sum of a received chunk into a device's own: one
// element at a time.
func addScalar(dst, x []float32) {
	for i := range dst {
		dst[i] += x[i]
	}
}
