package infeed

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/unit"
)

func base() Config {
	return Config{Chips: 1, VCPUs: 4, NUMANodes: 1, Placement: Local, CrossNUMA: 1.3, ExampleCost: time.Millisecond,
		Batch: 16, ExampleBytes: 1024, PCIe: 16e9, HBM: 16 * unit.GiB, InfeedDepth: 2, HBMBuffers: 2, OutfeedDepth: 2,
		Compute: 2 * time.Millisecond, Steps: 200, Seed: 1}
}

func TestProducerSlowerThanConsumer(t *testing.T) {
	// Queueing theory for a deterministic tandem line: throughput is set by
	// the slowest stage. 4 vCPUs make a 16-example batch every
	// ceil(16/4)·1 ms = 4 ms; the MXU needs 2 ms. The step takes the
	// producer's 4 ms and the MXU is busy 2/4 of the time: the producer's
	// rate over the consumer's.
	r, err := Run(base())
	if err != nil {
		t.Fatal(err)
	}
	p := PerChipStep(16, 4, time.Millisecond)
	if r.StepTime != p {
		t.Errorf("step %v, want the producer period %v", r.StepTime, p)
	}
	busy := float64(base().Compute) / float64(r.StepTime)
	if want := (1 / p.Seconds()) / (1 / base().Compute.Seconds()); math.Abs(busy-want) > 1e-9 {
		t.Errorf("steady MXU busy %v, want producer/consumer rate %v", busy, want)
	}
	// Over the whole run (with the first batch's fill) the measured busy
	// fraction tends to the same ratio.
	if math.Abs(r.MXUBusy-0.5) > 0.01 {
		t.Errorf("MXU busy fraction %v, want about 0.5", r.MXUBusy)
	}
	if !r.InputBound() || r.Stalls.InfeedEmpty < r.Makespan*4/10 {
		t.Errorf("stalls %+v of %v: want mostly infeed empty", r.Stalls, r.Makespan)
	}
}

func TestConsumerSlowerThanProducer(t *testing.T) {
	c := base()
	c.VCPUs = 16 // a batch every 1 ms
	c.ParamLoad = time.Millisecond
	r, _ := Run(c)
	if r.StepTime != 3*time.Millisecond || r.InputBound() || !r.Busy() {
		t.Errorf("step %v busy %v stalls %+v; want the MXU's 3 ms", r.StepTime, r.Busy(), r.Stalls)
	}
}

func TestOutfeedFull(t *testing.T) {
	// The host drains a result every 5 ms but the MXU makes one every 2: the
	// outfeed fills and the ready MXU waits on it.
	c := base()
	c.VCPUs = 16
	c.Drain = 5 * time.Millisecond
	r, _ := Run(c)
	if r.StepTime != 5*time.Millisecond || r.Stalls.OutfeedFull < r.Makespan/2 {
		t.Errorf("step %v stalls %+v, want 5 ms and mostly outfeed full", r.StepTime, r.Stalls)
	}
}

func TestHBMCopyStall(t *testing.T) {
	// 16 KiB batches over a 1 MB/s link take 16.4 ms to copy.
	c := base()
	c.VCPUs = 16
	c.PCIe = 1e6
	r, _ := Run(c)
	copyTime := time.Duration(math.Ceil(16 * 1024 / 1e6 * 1e9))
	if r.StepTime != copyTime || r.Stalls.HBMCopy < r.Makespan/2 {
		t.Errorf("step %v stalls %+v; want the copy's %v, mostly HBM copy", r.StepTime, r.Stalls, copyTime)
	}
}

func TestNUMAPlacement(t *testing.T) {
	// A TPU7x VM: 4 chips, 2 NUMA nodes. With every worker on node 0, the
	// chips on node 1 are fed across the socket link (1.3x per example) and
	// the host falls behind where local placement keeps up.
	s7, _ := hw.ParseAcceleratorType("tpu7x-8")
	c := ForSlice(s7)
	c.VCPUs = 48
	c.Compute = 44 * time.Millisecond // 12 vCPUs per chip: ceil(256/12)·2 ms = 44 ms
	c.Steps = 20
	local, _ := Run(c)
	c.Placement = Node0
	far, _ := Run(c)
	if !local.Busy() || far.Busy() || far.StepTime <= local.StepTime {
		t.Errorf("local step %v busy %v; node0 step %v busy %v", local.StepTime, local.Busy(), far.StepTime, far.Busy())
	}
}

func TestMinVCPUs(t *testing.T) {
	// One chip, 256 examples of 2 ms, 50 ms of compute: v workers need
	// ceil(256/v)·2 ms ≤ 50 ms, so v = 11 (24·2 = 48 ms) and not 10 (52 ms).
	c := base()
	c.Batch, c.ExampleCost, c.Compute, c.Steps = 256, 2*time.Millisecond, 50*time.Millisecond, 30
	n, r, ok, err := MinVCPUs(c, 224)
	if err != nil || !ok || n != 11 || !r.Busy() {
		t.Errorf("MinVCPUs = %d (ok %v, err %v, step %v), want 11", n, ok, err, r.StepTime)
	}
	c.Compute = time.Millisecond // 256 examples in 1 ms needs 512 vCPUs
	if n, _, ok, _ := MinVCPUs(c, 224); ok || n != 224 {
		t.Errorf("MinVCPUs for an impossible rate = %d, ok %v", n, ok)
	}
}

// TestMinVCPUsScan holds the doubling-then-bisecting search to a plain
// scan (a second implementation): the first count from 1 up whose run the
// host does not bound, across placements, NUMA nodes, jitter and limits.
func TestMinVCPUsScan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mut   func(*Config)
		limit int
	}{
		{"one chip", func(c *Config) {}, 64},
		{"two chips two nodes local", func(c *Config) { c.Chips, c.NUMANodes = 2, 2 }, 64},
		{"two chips node0", func(c *Config) { c.Chips, c.NUMANodes, c.Placement = 2, 2, Node0 }, 64},
		{"four chips interleaved jitter", func(c *Config) { c.Chips, c.NUMANodes, c.Placement, c.Jitter = 4, 2, Interleaved, 0.3 }, 96},
		{"limit too small", func(c *Config) { c.Chips = 4 }, 5},
		{"limit not a power of two", func(c *Config) { c.Batch = 40 }, 23},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			c.Steps = 40
			tc.mut(&c)
			want, wantOK := tc.limit, false
			for v := 1; v <= tc.limit; v++ {
				if c.Placement == Local && v < c.NUMANodes {
					continue
				}
				c.VCPUs = v
				r, err := Run(c)
				if err != nil {
					t.Fatal(err)
				}
				if r.Bound() != HostBound {
					want, wantOK = v, true
					break
				}
			}
			n, r, ok, err := MinVCPUs(c, tc.limit)
			if err != nil || n != want || ok != wantOK {
				t.Errorf("MinVCPUs = %d (ok %v, err %v), scan finds %d (ok %v)", n, ok, err, want, wantOK)
			}
			if r.Config.VCPUs != n {
				t.Errorf("MinVCPUs returned the result at %d vCPUs, want the one at %d", r.Config.VCPUs, n)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	c := base()
	c.Jitter = 0.5
	a, _ := Run(c)
	b, _ := Run(c)
	if a != b {
		t.Errorf("same seed, different results:\n%+v\n%+v", a, b)
	}
	c.Seed = 2
	d, _ := Run(c)
	if d == a {
		t.Error("different seeds gave identical jittered runs")
	}
}

func TestValidate(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.VCPUs = 0 },
		func(c *Config) { c.Batch = -1 },
		func(c *Config) { c.Compute = 0 },
		func(c *Config) { c.Placement = "far" },
		func(c *Config) { c.PCIe = 0 },
		func(c *Config) { c.Steps = 1e6 },
		func(c *Config) { c.NUMANodes, c.VCPUs = 2, 1 }, // node 1 would have no workers
		// non-finite factors fail every comparison: they must not pass as in range
		func(c *Config) { c.CrossNUMA = math.NaN() },
		func(c *Config) { c.Jitter = math.NaN() },
		func(c *Config) { c.Jitter = math.Inf(1) },
		func(c *Config) { c.PCIe = unit.BytesPerSecond(math.NaN()) },
		// products whose simulated time would overflow the int64 clock
		func(c *Config) { c.ExampleBytes = math.MaxInt64 },
		func(c *Config) { c.Compute = math.MaxInt64 },
		func(c *Config) { c.ExampleBytes, c.Batch, c.PCIe = MaxExampleBytes, 1<<20, 1e3 },
		func(c *Config) { c.ExampleCost, c.Batch, c.Steps = time.Hour, 1<<20, 40 },
		func(c *Config) { c.Compute, c.Steps = time.Hour, 100000 },
	} {
		c := base()
		mut(&c)
		if _, err := Run(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: error %v, want ErrInvalid", c, err)
		}
	}
}

func TestRandomConfigsFinish(t *testing.T) {
	// Whatever the shape of the host, every chip runs every step: the event
	// queue never empties early (Run reports ErrStuck if it does).
	rng := rand.New(rand.NewPCG(7, 7))
	for n := range 300 {
		c := base()
		c.Chips = 1 + rng.IntN(8)
		c.NUMANodes = 1 + rng.IntN(2)
		c.VCPUs = c.NUMANodes + rng.IntN(64)
		c.Placement = []Placement{Local, Interleaved, Node0}[rng.IntN(3)]
		c.Batch = 1 + rng.IntN(40)
		c.Jitter = rng.Float64()
		c.InfeedDepth, c.HBMBuffers, c.OutfeedDepth = 1+rng.IntN(3), 1+rng.IntN(3), 1+rng.IntN(3)
		c.Compute = time.Duration(1+rng.IntN(5000)) * time.Microsecond
		c.Drain = time.Duration(rng.IntN(3000)) * time.Microsecond
		c.ParamLoad = time.Duration(rng.IntN(1000)) * time.Microsecond
		c.Steps = MinMeasuredSteps + rng.IntN(30) // a single step's Sim: the transcripts
		c.Seed = uint64(n)
		if _, err := Run(c); err != nil {
			t.Fatalf("config %d %+v: %v", n, c, err)
		}
	}
}

func FuzzParsePlacement(f *testing.F) {
	for _, s := range []string{"local", "interleaved", "node0", "far", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlacement(s)
		if err == nil && string(p) != s {
			t.Fatalf("ParsePlacement(%q) = %q", s, p)
		}
	})
}

// TestForSlice: the host simulated is one VM of the slice, as the VM
// tables give it: v5litepod-8 is one ct5lp-hightpu-8t (8 chips, 224
// vCPUs, 2 NUMA nodes) and v5litepod-16 ct5lp-hightpu-4t VMs (4, 112, 1)
// (cloud.google.com/tpu/docs/v5e); v6e-8 is costed as the two
// ct6e-standard-4t VMs (4 chips, 180 vCPUs) GKE and xpk make it of
// (cloud.google.com/tpu/docs/v6e; hw's catalog says why), as are v6e-4
// and v6e-16; v6e-1 is one ct6e-standard-1t (the same doc's 1x1 row),
// 1 chip whose vCPUs no stored source gives: hw's stand-in of 4 a chip
// (hw.AssumedVCPUsPerChip), not the 4t's 180.
func TestForSlice(t *testing.T) {
	for _, c := range []struct {
		tpu                string
		chips, vcpus, numa int
	}{
		{"v5litepod-8", 8, 224, 2}, {"v5litepod-16", 4, 112, 1},
		{"v6e-8", 4, 180, 1}, {"v6e-16", 4, 180, 1}, {"v6e-4", 4, 180, 1},
		{"v6e-1", 1, hw.AssumedVCPUsPerChip, 1},
	} {
		s, err := hw.ParseAcceleratorType(c.tpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := ForSlice(s); got.Chips != c.chips || got.VCPUs != c.vcpus || got.NUMANodes != c.numa {
			t.Errorf("ForSlice(%s): %d chips, %d vCPUs, %d NUMA nodes; want %d, %d, %d", c.tpu, got.Chips, got.VCPUs, got.NUMANodes, c.chips, c.vcpus, c.numa)
		}
	}
}
