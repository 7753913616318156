package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/unit"
)

func request(t testing.TB, modelName, accel string, slices int, maxBatch int) Request {
	t.Helper()
	spec, ok := model.Lookup(modelName)
	if !ok {
		t.Fatalf("no model %s", modelName)
	}
	s, err := hw.ParseAcceleratorType(accel)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := hw.NewMultislice(s, slices, 0)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Model: spec, Multislice: ms, MaxGlobalBatch: maxBatch, Top: 3, HBMHeadroom: cost.DefaultHBMHeadroom}
}

// reasons and warns are the plan's notes in plan's own words.
func reasons(p Plan) string { return strings.Join(phrases(p.Reasons, nil), "\n") }
func warns(p Plan) string   { return strings.Join(phrases(p.Warnings, nil), "\n") }

// The rule order, a case each.

func TestRuleDPChosen(t *testing.T) {
	// Llama 3 8B on one TPU7x VM: a full replica's 16 B/param state is 120 GiB,
	// which fits in 192 GiB of HBM, so pure data parallelism is chosen.
	p, err := Search(request(t, "llama3-8b", "tpu7x-8", 1, 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Tier != TierDP || p.Best.Estimate.Mesh.String() != "data=4" {
		t.Errorf("chose %s (%s), want data=4 (pure DP)", p.Best.Estimate.Mesh, p.Best.Tier)
	}
	if !strings.Contains(reasons(p), "single host") || !strings.Contains(reasons(p), "pure data parallelism") {
		t.Errorf("reasons do not explain the choice:\n%s", reasons(p))
	}
	if !p.Best.Estimate.Memory.Fits() {
		t.Error("chosen layout does not fit")
	}
}

func TestRuleFSDPWhenMemoryBinds(t *testing.T) {
	// Llama 3 70B: 1.03 TiB of state per replica cannot fit a 192 GiB chip.
	p, err := Search(request(t, "llama3-70b", "tpu7x-128", 2, 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Tier != TierFSDP {
		t.Fatalf("chose %s (%s), want FSDP", p.Best.Estimate.Mesh, p.Best.Tier)
	}
	if p.Rejected[cost.ReasonHBM] == 0 || !strings.Contains(reasons(p), "FSDP: pure data parallelism cannot run (does not fit in HBM") {
		t.Errorf("reasons do not say DP does not fit:\n%s", reasons(p))
	}
	// FSDP inside the slice, data parallelism across the two.
	m := p.Best.Estimate.Mesh
	if m.Degree(mesh.FSDP).ICI != 64 || m.Degree(mesh.Data).DCN*m.Degree(mesh.FSDP).DCN != 2 {
		t.Errorf("chose %s, want fsdp=64 inside the slice", m)
	}
}

func TestRulePipelineAcrossSlicesWhenBatchLimited(t *testing.T) {
	// Two TPU7x slices with a slow DCN (25 Gbit/s per host) and a batch limit
	// of 256 x 1024 tokens: DP across slices would need ~3M tokens per slice
	// to hide its all-reduce, so pipeline parallelism across the slices is
	// considered, and wins.
	r := request(t, "llama3-70b", "tpu7x-128", 2, 256)
	r.Seq = 1024
	ms, err := hw.NewMultislice(r.Multislice.Slice, 2, unit.BitsPerSecond(25e9))
	if err != nil {
		t.Fatal(err)
	}
	r.Multislice = ms
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Best.Estimate.Mesh
	if p.Best.Tier != TierPipelineDCN || m.Degree(mesh.Pipeline).DCN != 2 || m.Degree(mesh.Tensor).Size() != 1 {
		t.Errorf("chose %s (%s), want pipeline=2(dcn)", m, p.Best.Tier)
	}
	if !strings.Contains(reasons(p), "batch limit") {
		t.Errorf("reasons do not mention the batch limit:\n%s", reasons(p))
	}
	// With the catalog's 400 Gbit/s per host the same limit still triggers
	// the rule, but FSDP with data across slices stays faster.
	r = request(t, "llama3-70b", "tpu7x-128", 2, 256)
	r.Seq = 1024
	p, err = Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Tier != TierFSDP || !strings.Contains(reasons(p), "batch limit") {
		t.Errorf("fast DCN: chose %s (%s), want FSDP after considering the pipeline", p.Best.Estimate.Mesh, p.Best.Tier)
	}
}

func TestTensorOverDCNRejected(t *testing.T) {
	r := request(t, "llama3-70b", "tpu7x-128", 2, 512)
	r.Axes = []mesh.Degree{{Axis: mesh.FSDP, ICI: 64, DCN: 1}, {Axis: mesh.Tensor, ICI: 1, DCN: 2}}
	_, err := Search(r)
	if !errors.Is(err, mesh.ErrTensorOverDCN) {
		t.Fatalf("error = %v, want ErrTensorOverDCN", err)
	}
	// And the search never proposes it.
	r.Axes = nil
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rejected[cost.ReasonTensorDCN] == 0 {
		t.Error("search did not count tensor-over-DCN layouts as rejected")
	}
	for _, c := range append(p.Top, p.Alternatives...) {
		if c.Estimate.Mesh.Degree(mesh.Tensor).DCN > 1 {
			t.Errorf("search proposed %s", c.Estimate.Mesh)
		}
	}
}

func TestModelParallelWhenNothingElseRuns(t *testing.T) {
	// 16 sequences cannot be split over 128 chips by data or fsdp alone.
	p, err := Search(request(t, "llama3-70b", "tpu7x-128", 2, 16))
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Tier != TierModel || p.Best.Estimate.Job.GlobalBatch > 16 {
		t.Errorf("chose %s (%s) batch %d", p.Best.Estimate.Mesh, p.Best.Tier, p.Best.Estimate.Job.GlobalBatch)
	}
	if !strings.Contains(reasons(p), "needs a global batch above max global batch") {
		t.Errorf("reasons:\n%s", reasons(p))
	}
}

func TestNoPlan(t *testing.T) {
	// Llama 3 405B cannot train on one 4-chip v5e host.
	_, err := Search(request(t, "llama3-405b", "v5litepod-4", 1, 512))
	if !errors.Is(err, ErrNoPlan) || !strings.Contains(err.Error(), "does not fit in HBM") {
		t.Errorf("error = %v, want ErrNoPlan naming HBM", err)
	}
}

func TestFixedBatch(t *testing.T) {
	r := request(t, "llama3-8b", "v5p-128", 1, 1024)
	r.GlobalBatch = 256
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(p.Top, p.Alternatives...) {
		if c.Estimate.Job.GlobalBatch != 256 {
			t.Errorf("%s uses batch %d, want 256", c.Estimate.Mesh, c.Estimate.Job.GlobalBatch)
		}
	}
	r.GlobalBatch = 2048
	if _, err := Search(r); !errors.Is(err, ErrRequest) {
		t.Errorf("batch above the limit: %v, want ErrRequest", err)
	}
}

func TestFactorizations(t *testing.T) {
	// Ordered 5-factorizations of p^a q^b number C(a+4,4)·C(b+4,4).
	for _, c := range []struct{ n, want int }{{1, 1}, {2, 5}, {4, 15}, {12, 75}, {9216, 15015}} {
		if got := len(factorizations(c.n, 5)); got != c.want {
			t.Errorf("factorizations(%d, 5) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	r := request(t, "llama3-70b", "v5p-256", 2, 1024)
	var first string
	for i := range 3 {
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := p.WriteText(&b, nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.String()
		} else if b.String() != first {
			t.Fatal("two searches of the same request differ")
		}
	}
}

func benchmarkSearch(b *testing.B, r Request) {
	var n int
	for b.Loop() {
		p, err := Search(r)
		if err != nil {
			b.Fatal(err)
		}
		n += p.Evaluated
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "layouts/s")
}

// BenchmarkSearchTPU7xPod plans Llama 3 405B on a full 9,216-chip TPU7x pod.
func BenchmarkSearchTPU7xPod(b *testing.B) {
	benchmarkSearch(b, request(b, "llama3-405b", "tpu7x-18432", 1, 4096))
}

// BenchmarkSearchV5p4Slices plans Llama 3 405B on 4 slices of v5p-8960.
func BenchmarkSearchV5p4Slices(b *testing.B) {
	benchmarkSearch(b, request(b, "llama3-405b", "v5p-8960", 4, 4096))
}

// BenchmarkSearchOneHost is the baseline: one TPU7x VM.
func BenchmarkSearchOneHost(b *testing.B) {
	benchmarkSearch(b, request(b, "llama3-8b", "tpu7x-8", 1, 512))
}

func TestSearchScope(t *testing.T) {
	// One host when the job fits one VM, else the smallest slice, else
	// several of the largest slices.
	tests := []struct {
		model, gen   string
		hosts, chips int
		multislice   bool
		reason       string
	}{
		{"llama3-8b", "tpu7x", 1, 4, false, "single host"},
		{"llama3-405b", "tpu7x", 16, 64, false, "smallest footprint"},
		{"llama3-405b", "v5e", 0, 0, true, "multislice"},
	}
	for _, tt := range tests {
		c, err := hw.Lookup(tt.gen)
		if err != nil {
			t.Fatal(err)
		}
		r := request(t, tt.model, "tpu7x-8", 1, 512)
		p, err := SearchScope(r, c, 16)
		if err != nil {
			t.Fatalf("%s on %s: %v", tt.model, tt.gen, err)
		}
		ms := p.Request.Multislice
		if tt.multislice != (ms.Slices > 1) || (!tt.multislice && (ms.Hosts() != tt.hosts || ms.Chips() != tt.chips)) {
			t.Errorf("%s on %s: chose %s", tt.model, tt.gen, ms)
		}
		if !strings.Contains(reasons(p), tt.reason) {
			t.Errorf("%s on %s: reasons lack %q:\n%s", tt.model, tt.gen, tt.reason, reasons(p))
		}
	}
}

// FuzzSearch plans random user models: whatever the spec, the planner
// answers or errors, and never panics.
func FuzzSearch(f *testing.F) {
	f.Add(2, 64, 4, 2, 256, 1000, 128, 8)
	f.Add(1, 1, 1, 1, 1, 1, 1, 1)
	f.Add(3, 96, 3, 1, 7, 50000, 9, 3)
	s, _ := hw.ParseAcceleratorType("v5p-16")
	ms, _ := hw.NewMultislice(s, 2, 0)
	f.Fuzz(func(t *testing.T, layers, d, heads, kv, dff, vocab, seq, maxBatch int) {
		spec := model.Spec{Name: "fuzz", Layers: layers, DModel: d, Heads: heads, KVHeads: kv, DFF: dff, Vocab: vocab, SeqLen: seq}
		if spec.Validate() != nil || layers > 64 || d > 1<<14 || dff > 1<<16 || vocab > 1<<18 || seq > 1<<14 || maxBatch < 1 || maxBatch > 1<<12 {
			return
		}
		p, err := Search(Request{Model: spec, Multislice: ms, MaxGlobalBatch: maxBatch, HBMHeadroom: cost.DefaultHBMHeadroom})
		if err != nil {
			if !errors.Is(err, ErrNoPlan) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !p.Best.Estimate.Memory.Fits() || p.Best.Estimate.Job.GlobalBatch > maxBatch {
			t.Fatalf("plan breaks its constraints: %+v", p.Best.Estimate.Job)
		}
	})
}

func TestInputBoundFlagged(t *testing.T) {
	// A small model at a large batch takes little MXU time per sequence: at
	// 20 ms of host CPU per sequence the four chips of one TPU7x VM need more
	// vCPUs than its 224 (800 by the infeed simulation).
	spec := model.Spec{Name: "small", Layers: 4, DModel: 512, Heads: 8, DFF: 2048, Vocab: 32000, SeqLen: 512, GatedMLP: true}
	s, _ := hw.ParseAcceleratorType("tpu7x-8")
	ms, _ := hw.NewMultislice(s, 1, 0)
	r := Request{Model: spec, Multislice: ms, MaxGlobalBatch: 4096, GlobalBatch: 4096, ExampleCost: 20 * time.Millisecond, HBMHeadroom: cost.DefaultHBMHeadroom}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	w := warns(p)
	if !strings.Contains(w, "input-bound: needs") || !strings.Contains(w, "has 224") {
		t.Errorf("warnings lack the input-bound flag:\n%s", w)
	}
	// At 0.1 ms per sequence the VM keeps up, and the plan says how many
	// vCPUs it uses.
	r.ExampleCost = 100 * time.Microsecond
	p, err = Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(warns(p), "input-bound") || !strings.Contains(reasons(p), "vCPUs per host") {
		t.Errorf("fast input flagged or unexplained:\n%s\n%s", reasons(p), warns(p))
	}
}
