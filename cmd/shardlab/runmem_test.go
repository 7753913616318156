package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"shardlab/emu"
)

// heapInUse is the Go heap's spans in use: live objects, dead ones not yet
// swept, and free slots in spans that hold others.
func heapInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() + s[1].Value.Uint64())
}

// TestRunHeapIsTheEstimate: the heap a run uses at its peak (sampled every
// millisecond) is emu.EstimateMemory's estimate, within 15% below and 5%
// above. run --layers 1024 estimated 9.7 GB and took 14.0 GB of RSS (the
// issue measured 11.5 GB): the collector let the heap grow to twice what
// was live, the garbage being the layers' temporaries and, in the
// backward pass, the activations it was done with.
func TestRunHeapIsTheEstimate(t *testing.T) {
	args := []string{"--synthetic", "--quiet", "--steps", "1", "--layers", "16", "--seq", "128"}
	fs, f := newRunFlags()
	if err := parseFlags(fs, args); err != nil {
		t.Fatal(err)
	}
	m, err := f.layout(setFlags(fs), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := f.trainConfig(m)
	if err != nil {
		t.Fatal(err)
	}
	est, err := emu.EstimateMemory(tc)
	if err != nil {
		t.Fatal(err)
	}
	// The sampler can only miss the peak (a busy machine delays it past
	// the moment), never see more than was in use, so a low reading is
	// taken again, up to three runs, and the highest counts.
	var used int64
	for range 3 {
		u, err := sampledPeak(args)
		if err != nil {
			t.Fatal(err)
		}
		if used = max(used, u); float64(used) >= 0.85*float64(est.Process) {
			break
		}
	}
	ratio := float64(used) / float64(est.Process)
	t.Logf("estimate %d bytes (static %d, step %d), heap at the peak %d above the heap before: %.3f of the estimate", est.Process, est.Static, est.Step, used, ratio)
	if ratio < 0.85 || ratio > 1.05 {
		t.Errorf("run %v used %d bytes of heap at its peak, estimated %d: %.2f times, want 0.85 to 1.05", args, used, est.Process, ratio)
	}
}

// sampledPeak runs shardlab run with args and returns the most heap in use
// above what was in use before, sampled every millisecond.
func sampledPeak(args []string) (int64, error) {
	runtime.GC()
	base := heapInUse()
	var peak int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapInUse())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	_, errOut, code := runCmd(append([]string{"run"}, args...)...)
	close(stop)
	wg.Wait()
	if code != 0 {
		return 0, fmt.Errorf("exit %d: %s", code, errOut)
	}
	return peak - base, nil
}
