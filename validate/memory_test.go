package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"shardlab/cost"
	"shardlab/internal/golden"
	"shardlab/mesh"
	"shardlab/unit"
)

// TestMemoryCasesBuild: every case of the built-in table parses and its
// configuration builds a job and a mesh that cost can size.
func TestMemoryCasesBuild(t *testing.T) {
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("MemoryCases() = no cases")
	}
	est := cost.NewEstimator()
	for _, c := range cases {
		j, m, err := c.Run(c.ID).Setup()
		if err != nil {
			t.Errorf("%s: Setup() error %v", c.ID, err)
			continue
		}
		if _, err := est.Memory(j, m); err != nil {
			t.Errorf("%s: cost Memory error %v", c.ID, err)
		}
		if got := m.Chips(); got != c.Chips {
			t.Errorf("%s: mesh chips = %d, want the table's %d", c.ID, got, c.Chips)
		}
		if c.Source.Repo == "" || c.Date == "" || (c.Source.Path == "" && c.Source.Issue == "") {
			t.Errorf("%s: source %+v, date %q: want a source and a date on every row", c.ID, c.Source, c.Date)
		}
	}
}

// TestMemoryCaseBroken: a row whose configuration does not build is
// refused when the table is read, naming the case.
func TestMemoryCaseBroken(t *testing.T) {
	// ici_fsdp 3 cannot fill a tpu7x-128's 128 devices.
	data := bytes.Replace(memoryYAML, []byte("    ici_fsdp: 128\n"), []byte("    ici_fsdp: 3\n"), 1)
	if bytes.Equal(data, memoryYAML) {
		t.Fatal("memory.yaml has no ici_fsdp: 128 line to break")
	}
	_, err := ParseMemory(data)
	if err == nil || !strings.Contains(err.Error(), "memory case hy3-v7-64c-pdb12-aot") {
		t.Errorf("ParseMemory(ici_fsdp 3 on tpu7x-128) error = %v, want one naming hy3-v7-64c-pdb12-aot", err)
	}
}

// TestMemoryReportedBytes: each reported number is the source's printed
// figure in bytes; XLA's and MaxText's "G" are GiB (see memory.yaml).
func TestMemoryReportedBytes(t *testing.T) {
	tests := []struct {
		id      string
		printed string // as the quote prints it
		gib     float64
		exact   int64 // when the source printed bytes
	}{
		{"mt-52b-v4-384", "33.27G", 33.27, 0},                        // MaxText PR #4117: Used 33.27G of 30.75G
		{"mt-doc-ds2-16b-pdb24", "100.4 GB", 100.4, 0},               // MaxText understand_logs_and_metrics.md @36d0e5aa4
		{"tpurecipes-dsv3-v5p256-pdb6", "112.37G", 112.37, 0},        // yangwhale/tpu-recipes DeepSeek3 v5p README
		{"tpurecipes-dsv3-v5p256-pdb5", "68.03G", 68.03, 0},          // same README, runtime reservation
		{"hy3-v7-64c-pdb12-aot", "80477396448", 0, 80477396448},      // gpu-tpu-pedia AOT-COMPILE.md, CompiledMemoryStats
		{"hy3-v7-64c-pdb13-aot", "78,503,516,064", 0, 78503516064},   // gpu-tpu-pedia AOT-COMPILE.md
		{"hy3-v7-64c-pdb8-run", "74.20 G", 74.2, 0},                  // gpu-tpu-pedia QUICKSTART-v7.md
		{"hy3-v7-64c-pdb12-run", "91.94 G", 91.94, 0},                // gpu-tpu-pedia QUICKSTART-v7.md
		{"hy3-v7-256c-fsdp256-pdb8-run", "61.36", 61.36, 0},          // gpu-tpu-pedia QUICKSTART-v7.md
		{"hy3-v7-256c-fsdp256-pdb16-run", "92.33 G", 92.33, 0},       // gpu-tpu-pedia QUICKSTART-v7.md
		{"hy3-v5p-256c-pdb8", "92.68G", 92.68, 0},                    // gpu-tpu-pedia TUNING-v5p.md 7.1
		{"hy3-v5p-256c-pdb9", "93.17", 93.17, 0},                     // gpu-tpu-pedia TUNING-v5p.md 7.1
		{"hy3-v5p-256c-pdb10", "102.77", 102.77, 0},                  // gpu-tpu-pedia TUNING-v5p.md 7.1
		{"hy3-v5p-256c-pdb12", "113.79", 113.79, 0},                  // gpu-tpu-pedia TUNING-v5p.md 7.1
		{"hy3-v5p-256c-pdb8-rematfull", "123.33 G", 123.33, 0},       // gpu-tpu-pedia TUNING-v5p.md 3.1
		{"wiki-qwen3-8b-v6e8-s8k-pdb3-ref", "25.83/31.25", 25.83, 0}, // autoresearch wiki, xprof peak
		// Set B. The probe CSV prints temp_gb = bytes / 1e9 (its 80.48 for
		// per-device batch 12 is hy3-v7-64c-pdb12-aot's 80477396448).
		{"hy3-v7-64c-probe-p13-outproj-off", "76.65", 0, 76_650_000_000},
		// Out-of-memory failures whose sources state no bytes: 0.
		{"mt-22b-v4-128-pdb13", "fails with an HBM OOM", 0, 0},                 // MaxText PR #4081
		{"mt-llama2-70b-v5p128-pdb4", "encounters OOM", 0, 0},                  // MaxText PR #2957
		{"hy3-v7-64c-probe-p14", "p14,0.00,0.00,OOM", 0, 0},                    // probe CSV
		{"hy3-v7-64c-probe-p15", "p15,0.00,0.00,OOM", 0, 0},                    // probe CSV
		{"hy3-v7-64c-probe-p16", "p16,0.00,0.00,OOM", 0, 0},                    // probe CSV
		{"hy3-v7-64c-probe-p12-dli-device", ",0.00,0.00,OOM", 0, 0},            // probe CSV
		{"hy3-v7-64c-probe-p12-outproj-dev", ",0.00,0.00,OOM", 0, 0},           // probe CSV
		{"hy3-v7-64c-probe-p12-remat-full", ",0.00,0.00,OOM", 0, 0},            // probe CSV
		{"hy3-v7-64c-probe-p12-remat-minimal", ",0.00,0.00,OOM", 0, 0},         // probe CSV
		{"hy3-v7-64c-probe-p12-mlpwo-dev", ",0.00,0.00,OOM", 0, 0},             // probe CSV
		{"hy3-v7-64c-probe-p16-alloff", ",0.00,0.00,OOM", 0, 0},                // probe CSV
		{"hy3-v7-64c-probe-p14-outproj-off", ",0.00,0.00,OOM", 0, 0},           // probe CSV
		{"hy3-v7-64c-probe-p14-outproj-off-mlpwi-off", ",0.00,0.00,OOM", 0, 0}, // probe CSV
	}
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]MemoryCase{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	if len(tests) != len(cases) {
		t.Errorf("the test covers %d cases, the table has %d", len(tests), len(cases))
	}
	for _, tt := range tests {
		c, ok := byID[tt.id]
		if !ok {
			t.Errorf("%s: not in the table", tt.id)
			continue
		}
		want := tt.exact
		if want == 0 {
			want = int64(math.Round(tt.gib * (1 << 30)))
		}
		if c.ReportedBytes != want {
			t.Errorf("%s: reported_bytes = %d, want %d (%s)", tt.id, c.ReportedBytes, want, tt.printed)
		}
		if !strings.Contains(c.Quote, tt.printed) {
			t.Errorf("%s: quote %q does not print %q", tt.id, c.Quote, tt.printed)
		}
	}
}

// TestMemoryCaseMeshes: MaxText's layout in JAX devices becomes the mesh
// in chips the table means.
func TestMemoryCaseMeshes(t *testing.T) {
	tests := []struct {
		id              string
		fsdp, data, dcn int
	}{
		{"mt-52b-v4-384", 192, 1, 2},                 // 52b.sh: ici_fsdp 192 on each of 2 v4-384 slices (PR #4117)
		{"mt-doc-ds2-16b-pdb24", 4, 1, 1},            // ici_fsdp -1 on v5p-8 = 4 chips
		{"hy3-v7-64c-pdb12-aot", 64, 1, 1},           // ici_fsdp 128 devices = 64 TPU7x chips
		{"hy3-v7-256c-fsdp256-pdb16-run", 128, 2, 1}, // QUICKSTART-v7.md: DP2 x FSDP256 devices on 256 chips
		{"hy3-v5p-256c-pdb8", 256, 1, 1},             // v5p-512 = 256 chips, ici_fsdp -1
	}
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		for _, c := range cases {
			if c.ID != tt.id {
				continue
			}
			_, m, err := c.Run(c.ID).Setup()
			if err != nil {
				t.Fatal(err)
			}
			if f, d, n := m.Size(mesh.FSDP), m.Degree(mesh.Data).ICI, m.Degree(mesh.Data).DCN; f != tt.fsdp || d != tt.data || n != tt.dcn {
				t.Errorf("%s: fsdp %d, ici data %d, dcn data %d, want %d, %d, %d", tt.id, f, d, n, tt.fsdp, tt.data, tt.dcn)
			}
		}
	}
}

// TestMemoryLeftOut: the header lists each candidate left out of set A,
// none of them is in the table, and with set A they make the research's
// 33 candidate rows; set B publishes its own rules.
func TestMemoryLeftOut(t *testing.T) {
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	setA := 0
	for _, c := range cases {
		in[c.ID] = true
		if c.Set == SetA {
			setA++
		}
	}
	header, _, _ := strings.Cut(string(memoryYAML), "\n- id:")
	_, list, ok := strings.Cut(header, "# Cases left out, and why:\n")
	if !ok {
		t.Fatal("memory.yaml's header has no list of cases left out")
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^#   ([a-z0-9.-]+)(, (-[a-z0-9]+))?(, (-[a-z0-9]+))?:`).FindAllStringSubmatch(list, -1) {
		out = append(out, m[1])
		base := m[1][:strings.LastIndex(m[1], "-")]
		for _, suf := range []string{m[3], m[5]} {
			if suf != "" {
				out = append(out, base+suf)
			}
		}
	}
	for _, id := range out {
		if in[id] {
			t.Errorf("%s is listed as left out and is in the table", id)
		}
	}
	if got := len(out) + setA; got != 33 {
		t.Errorf("left out %d + set A %d = %d, want the research notes' 33 candidates", len(out), setA, got)
	}
	if !strings.Contains(header, "How the cases were chosen") {
		t.Error("memory.yaml's header does not publish how the cases were chosen")
	}
	if setA < len(cases) && !strings.Contains(header, "# Set B, added ") {
		t.Error("memory.yaml has set B cases and its header does not say how they were chosen")
	}
}

// TestParseMemoryErrors: bad tables are refused with an error that names
// the field.
func TestParseMemoryErrors(t *testing.T) {
	good := string(memoryYAML[bytes.Index(memoryYAML, []byte("- id: mt-52b-v4-384")):bytes.Index(memoryYAML, []byte("- id: mt-doc-ds2-16b-pdb24"))])
	if _, err := ParseMemory([]byte(good)); err != nil {
		t.Fatalf("ParseMemory(the 52b case alone) error %v", err)
	}
	sub := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the 52b case has no %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct {
		name, data, want string
	}{
		{"unknown key", sub("  set: A\n", "  set: A\n  colour: red\n"), "colour"},
		{"fractional bytes", sub("reported_bytes: 35723390484", "reported_bytes: 35723390484.5"), "reported_bytes"},
		{"float bytes", sub("reported_bytes: 35723390484", "reported_bytes: 3.3e10"), "whole number"},
		{"nested fractional", sub("    ici_fsdp: 192\n", "    ici_fsdp: 1.5\n"), "layout.ici_fsdp"},
		{"NaN batch", sub("per_device_batch_size: 7", "per_device_batch_size: .nan"), "per_device_batch_size"},
		{"Inf batch", sub("per_device_batch_size: 7", "per_device_batch_size: .inf"), "per_device_batch_size"},
		{"NaN capacity factor", sub("  attention: flash\n", "  attention: flash\n  capacity_factor: .nan\n"), "capacity_factor"},
		{"kind", sub("kind: oom", "kind: crash"), "kind"},
		{"scope", sub("scope: total", "scope: all"), "scope"},
		{"set", sub("set: A", "set: C"), "set"},
		{"date", sub("date: 2026-06-09", "date: June 2026"), "date"},
		{"repo", sub("repo: AI-Hypercomputer/maxtext", "repo: maxtext"), "source.repo"},
		{"commit", sub("commit: 2b78bfa0dcb8c6c9f3e8f98f06792b6e57e4d484", "commit: main"), "source.commit"},
		{"no path or issue", sub("    issue: 'PR #4117'\n", ""), "source"},
		{"no quote", sub("  quote: fails with an HBM OOM during compilation (Used 33.27G of 30.75G)\n", ""), "quote"},
		{"negative bytes", sub("reported_bytes: 35723390484", "reported_bytes: -1"), "reported_bytes"},
		{"oom without capacity", sub("  capacity_bytes: 33017561088\n", ""), "capacity_bytes"},
		{"oom under capacity", sub("reported_bytes: 35723390484", "reported_bytes: 1000"), "reported_bytes"},
		{"no bytes, not oom", strings.Replace(sub("  reported_bytes: 35723390484\n", ""), "kind: oom", "kind: compiled_usage", 1), "only an oom case"},
		{"no bytes, breakdown", sub("  reported_bytes: 35723390484\n", "  breakdown:\n    argument: 5\n"), "breakdown"},
		{"chips", sub("chips: 384", "chips: 192"), "chips"},
		{"devices", sub("devices: 384", "devices: 768"), "devices"},
		{"global batch", sub("global_batch_sequences: 2688", "global_batch_sequences: 2689"), "global_batch_sequences"},
		{"generation", sub("generation: v4", "generation: v5p"), "generation"},
		{"remat", sub("remat_policy: full", "remat_policy: most"), "remat"},
		{"duplicate id", good + good, "unique id"},
		{"breakdown temp", sub("  quote:", "  breakdown:\n    temp: -5\n  quote:"), "breakdown.temp"},
		{"empty", "", "no cases"},
		{"not a list", "id: x\n", "case"},
	}
	for _, tt := range tests {
		_, err := ParseMemory([]byte(tt.data))
		if err == nil {
			t.Errorf("%s: ParseMemory succeeded, want an error naming %q", tt.name, tt.want)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v does not wrap ErrInvalid", tt.name, err)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q, want it to name %q", tt.name, err, tt.want)
		}
	}
}

// TestMemoryResult: the report's arithmetic on a hand-made estimate: per
// JAX device, arguments = weights + optimizer state, temp = the rest.
func TestMemoryResult(t *testing.T) {
	gib := int64(unit.GiB)
	mem := cost.Memory{Weights: 8 * unit.GiB, Gradients: 8 * unit.GiB, Optimizer: 16 * unit.GiB, Activations: 20 * unit.GiB, Transient: 8 * unit.GiB}
	tests := []struct {
		name                    string
		c                       MemoryCase
		per                     int
		total, args, temp, pred int64
		err                     float64
		refused                 bool
		argErr, tempErr         float64 // NaN: not compared
	}{
		// A TPU7x chip is two devices: 60 GiB per chip is 30 per device.
		{"tpu7x total", MemoryCase{Kind: KindCompiledUsage, Scope: ScopeTotal, ReportedBytes: 40 * gib}, 2,
			30 * gib, 12 * gib, 18 * gib, 30 * gib, -0.25, false, math.NaN(), math.NaN()},
		{"temp scope oom refused", MemoryCase{Kind: KindOOM, Scope: ScopeTemp, ReportedBytes: 40 * gib, CapacityBytes: 30 * gib}, 1,
			60 * gib, 24 * gib, 36 * gib, 36 * gib, -0.1, true, math.NaN(), math.NaN()},
		{"oom missed", MemoryCase{Kind: KindOOM, Scope: ScopeTotal, ReportedBytes: 80 * gib, CapacityBytes: 70 * gib}, 1,
			60 * gib, 24 * gib, 36 * gib, 60 * gib, -0.25, false, math.NaN(), math.NaN()},
		{"breakdown", MemoryCase{Kind: KindMemoryAnalysis, Scope: ScopeTotal, ReportedBytes: 60 * gib, Breakdown: Breakdown{Argument: 20 * gib, Temp: 40 * gib}}, 1,
			60 * gib, 24 * gib, 36 * gib, 60 * gib, 0, false, 0.2, -0.1},
		// An OOM whose source states no bytes: no error, refused against
		// its stated capacity (36 > 30), or without one against cost's
		// usable HBM per device (60 > 50 refused; 60 < 64 missed).
		{"oom no bytes, capacity stated", MemoryCase{Kind: KindOOM, Scope: ScopeTemp, CapacityBytes: 30 * gib}, 1,
			60 * gib, 24 * gib, 36 * gib, 36 * gib, math.NaN(), true, math.NaN(), math.NaN()},
		{"oom no bytes, usable refused", MemoryCase{Kind: KindOOM, Scope: ScopeTotal}, 1,
			60 * gib, 24 * gib, 36 * gib, 60 * gib, math.NaN(), true, math.NaN(), math.NaN()},
	}
	near := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-12 }
	mem.Usable = 50 * unit.GiB
	for _, tt := range tests {
		r := memoryResult(tt.c, mem, tt.per)
		if r.Total != tt.total || r.Arguments != tt.args || r.Temp != tt.temp || r.Predicted != tt.pred {
			t.Errorf("%s: total, arguments, temp, predicted = %d, %d, %d, %d GiB, want %d, %d, %d, %d", tt.name,
				r.Total/gib, r.Arguments/gib, r.Temp/gib, r.Predicted/gib, tt.total/gib, tt.args/gib, tt.temp/gib, tt.pred/gib)
		}
		if !near(r.Error, tt.err) || r.Refused != tt.refused || !near(r.ArgumentError, tt.argErr) || !near(r.TempError, tt.tempErr) {
			t.Errorf("%s: error %v, refused %v, argument error %v, temp error %v, want %v, %v, %v, %v", tt.name,
				r.Error, r.Refused, r.ArgumentError, r.TempError, tt.err, tt.refused, tt.argErr, tt.tempErr)
		}
	}
}

// TestMemorySummary: the median |error| is over the cases that ran, the
// refusals over the OOM cases, and each set on its own.
func TestMemorySummary(t *testing.T) {
	res := func(set, kind string, e float64, refused bool) MemoryResult {
		return MemoryResult{Case: MemoryCase{Set: set, Kind: kind, ReportedBytes: 1}, Error: e, Refused: refused}
	}
	rep := MemoryReport{Results: []MemoryResult{
		res(SetA, KindCompiledUsage, -0.3, false), res(SetA, KindMemoryAnalysis, 0.05, false), res(SetA, KindProfilePeak, 0.2, false),
		res(SetA, KindOOM, -0.9, true), res(SetA, KindOOM, -0.5, false), res(SetB, KindCompiledUsage, 0.01, false),
	}}
	// the first and the refused OOM case have settings shardlab cannot state
	rep.Results[0].Case.Unmodelled, rep.Results[3].Case.Unmodelled = "MTP", "MTP"
	got := rep.Summary(SetA)
	// every case: |errors| 0.05 0.2 0.3 0.5 0.9; stated: 0.05 0.2 0.5
	want := MemoryStats{Set: SetA, N: 5, Measured: 3, Median: 0.2, Max: 0.3, OOM: 2, OOMRefused: 1, WithinTenth: 1, Unmodelled: 2,
		AllMedian: 0.3, Stated: 3, StatedMedian: 0.2, StatedBytes: 3, StatedOOM: 1, StatedOOMRefused: 0}
	if got != want {
		t.Errorf("Summary(A) = %+v, want %+v", got, want)
	}
	if got := rep.Summary(SetB); got.N != 1 || got.Measured != 1 || math.Abs(got.Median-0.01) > 1e-12 {
		t.Errorf("Summary(B) = %+v, want 1 case, median 0.01", got)
	}
}

// TestMemorySummaryUnstated: an OOM case whose source states no bytes
// counts among the OOM cases and their refusals, in no median, and the
// report says so; with usable HBM above the prediction it is missed.
func TestMemorySummaryUnstated(t *testing.T) {
	gib := int64(unit.GiB)
	mem := cost.Memory{Weights: 8 * unit.GiB, Gradients: 8 * unit.GiB, Optimizer: 16 * unit.GiB, Activations: 20 * unit.GiB, Transient: 8 * unit.GiB, Usable: 64 * unit.GiB}
	stated := memoryResult(MemoryCase{Cited: Cited{ID: "s"}, Set: SetB, Kind: KindCompiledUsage, Scope: ScopeTotal, ReportedBytes: 50 * gib}, mem, 1)
	missed := memoryResult(MemoryCase{Cited: Cited{ID: "m"}, Set: SetB, Kind: KindOOM, Scope: ScopeTotal}, mem, 1)
	refused := memoryResult(MemoryCase{Cited: Cited{ID: "r"}, Set: SetB, Kind: KindOOM, Scope: ScopeTemp, CapacityBytes: 30 * gib}, mem, 1)
	if missed.Refused || !refused.Refused || missed.Limit != 64*gib || refused.Limit != 30*gib {
		t.Fatalf("refused %v (limit %d), %v (limit %d), want false at 64 GiB, true at 30 GiB", missed.Refused, missed.Limit, refused.Refused, refused.Limit)
	}
	rep := MemoryReport{Results: []MemoryResult{stated, missed, refused}}
	got := rep.Summary(SetB)
	// the missed case leaves 4 of 64 GiB free, less than the dense band's
	// 19.71 % of its 60 GiB: a plan of it warns "HBM at the edge"
	want := MemoryStats{Set: SetB, N: 3, Measured: 1, Median: 0.2, Max: 0.2, WithinTenth: 0, OOM: 2, OOMRefused: 1, OOMWarned: 1, OOMUnstated: 2, OOMUnstatedRefused: 1,
		AllMedian: 0.2, Stated: 3, StatedMedian: 0.2, StatedBytes: 1, StatedOOM: 2, StatedOOMRefused: 1, StatedOOMWarned: 1}
	if got != want {
		t.Errorf("Summary(B) = %+v\nwant %+v", got, want)
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"m B oom total not stated 60.00 GiB - 64.00 GiB + MISSED: predicted to fit, at the edge (plan warns)",
		"of them, 2 state no bytes (refused 1/2): they are in no median below",
		"not stated: the source says the step ran out of memory but not the bytes",
	} {
		if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), line) {
			t.Errorf("report lacks %q:\n%s", line, text.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON with a case that states no bytes: %v", err)
	}
	var back MemoryJSON
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if r := back.Rows[1]; r.Error != nil || r.Reported != 0 || r.Refused == nil || *r.Refused {
		t.Errorf("JSON row of an unstated OOM: error %v, reported %d, refused %v; want no error, no bytes, refused false", r.Error, r.Reported, r.Refused)
	}
	if r := back.Rows[0]; r.Error == nil || math.Abs(*r.Error-0.2) > 1e-12 {
		t.Errorf("JSON row of a stated case: error %v, want 0.2", r.Error)
	}
}

// TestMemoryReportGolden: the rendered report, text and JSON
// (go test ./validate -run TestMemoryReportGolden -update rewrites them).
func TestMemoryReportGolden(t *testing.T) {
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := EvaluateMemory(cases)
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "memory_report", text.Bytes())
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back MemoryJSON
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != len(cases) {
		t.Fatalf("WriteJSON: %v, %d rows, want %d", err, len(back.Rows), len(cases))
	}
	golden.Compare(t, "memory_report_json", js.Bytes())
}

// FuzzParseMemory: no input panics; a table that parses is valid, costs
// without error and reads back the same after writing.
func FuzzParseMemory(f *testing.F) {
	f.Add(memoryYAML)
	f.Add(memoryYAML[bytes.Index(memoryYAML, []byte("- id: mt-52b-v4-384")):bytes.Index(memoryYAML, []byte("- id: mt-doc-ds2-16b-pdb24"))])
	f.Add(bytes.Replace(memoryYAML[bytes.Index(memoryYAML, []byte("- id: mt-52b-v4-384")):bytes.Index(memoryYAML, []byte("- id: mt-doc-ds2-16b-pdb24"))],
		[]byte("  reported_bytes: 35723390484\n"), nil, 1)) // an oom that states no bytes
	f.Add([]byte("- id: x\n  reported_bytes: .nan\n"))
	f.Add([]byte("- {id: a, layout: {ici_fsdp: 1.5}}\n"))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := ParseMemory(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseMemory error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if len(cases) <= 4 { // costing a whole table is the other tests' job
			if _, err := EvaluateMemory(cases); err != nil {
				t.Fatalf("EvaluateMemory of a parsed table: %v", err)
			}
		}
		out, err := yaml.Marshal(cases)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseMemory(out)
		if err != nil {
			t.Fatalf("ParseMemory(yaml.Marshal(cases)): %v\n%s", err, out)
		}
		if len(again) != len(cases) {
			t.Fatalf("read back %d cases, want %d", len(again), len(cases))
		}
		for i := range cases {
			a, b := cases[i], again[i]
			if a.ID != b.ID || a.ReportedBytes != b.ReportedBytes || a.Config.Model != b.Config.Model || a.Breakdown != b.Breakdown || a.Source != b.Source {
				t.Fatalf("case %d read back as %+v, want %+v", i, b, a)
			}
		}
	})
}

// TestMemoryErrorBands holds the memory model's measured error that plan
// warns with (cost.MemoryErrorDense, cost.MemoryErrorMoE) to what the
// memory table gives: the median |error| of the peak a job needs (what
// the fit answer weighs, not the report XLA would print) over set A's
// cases of each model class, to four decimals.
func TestMemoryErrorBands(t *testing.T) {
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := EvaluateMemory(cases)
	if err != nil {
		t.Fatal(err)
	}
	var dense, moe []float64
	for _, r := range rep.Results {
		if r.Case.Set != SetA || !r.Case.BytesStated() {
			continue
		}
		if r.Case.Model.MoE() {
			moe = append(moe, math.Abs(r.NeededError))
		} else {
			dense = append(dense, math.Abs(r.NeededError))
		}
	}
	for _, c := range []struct {
		name string
		errs []float64
		band cost.ErrorBand
	}{{"dense", dense, cost.MemoryErrorDense}, {"MoE", moe, cost.MemoryErrorMoE}} {
		want := cost.ErrorBand{Median: math.Round(median(c.errs)*1e4) / 1e4, Cases: len(c.errs)}
		if c.band != want {
			t.Errorf("cost's %s memory error band = %+v, the table gives %+v", c.name, c.band, want)
		}
	}
}

// TestHostTempAgainstCompiler holds cost's offloaded activations
// (Memory.Host, per JAX device) to what XLA placed in pinned host memory
// on every memory case whose source gives its host temporaries: an
// independent check of the offload formula (each offloaded tensor, per
// layer, at the compute dtype). Hunyuan3 on 64 TPU7x chips offloads the
// decoder layer's input: 80 layers x 12 x 4,096 tokens x 4,096 x 2 bytes
// = 30.0 GiB per device against XLA's 29.6; its one MTP layer, which
// cost does not count, would add 1/80.
func TestHostTempAgainstCompiler(t *testing.T) {
	rep, err := BuiltInMemoryReport()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rep.Results {
		if r.Case.Breakdown.HostTemp == 0 {
			continue
		}
		n++
		if math.IsNaN(r.HostError) || math.Abs(r.HostError) > 0.05 {
			t.Errorf("%s: host %d bytes a device against XLA's %d (%+.1f%%), want within 5%%", r.Case.ID, r.Host, r.Case.Breakdown.HostTemp, 100*r.HostError)
		}
	}
	if n == 0 {
		t.Error("no memory case gives its host temporaries")
	}
	for _, r := range rep.Results {
		if r.Case.ID == "hy3-v7-64c-pdb12-aot" && r.Host != 80*12*4096*4096*2 {
			t.Errorf("%s: host %d bytes a device, want 80 x 12 x 4096 x 4096 x 2 = %d by hand", r.Case.ID, r.Host, 80*12*4096*4096*2)
		}
	}
}

// TestStatedOOMRefusedOrWarned: every out-of-memory case whose settings
// shardlab states is refused, or predicted so close to the HBM XLA had
// that a plan of it warns "HBM at the edge" (the memory model's measured
// error could take it over); none is accepted silently.
func TestStatedOOMRefusedOrWarned(t *testing.T) {
	rep, err := BuiltInMemoryReport()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rep.Results {
		if r.Case.Kind != KindOOM || r.Case.Unmodelled != "" {
			continue
		}
		n++
		if !r.Refused && !r.Warned {
			t.Errorf("%s: predicted %d bytes of %d and neither refused nor at the edge", r.Case.ID, r.Predicted, r.Limit)
		}
		if r.Refused && r.Warned {
			t.Errorf("%s: both refused and warned", r.Case.ID)
		}
	}
	if n < 5 {
		t.Errorf("%d stated out-of-memory cases, want the 5 of sets A and B", n)
	}
}

// TestMemoryResultPredictsXLAsReport holds memoryResult to
// cost.Memory.Compiled's three cases, on a job that needs 60 GiB and
// peaks at 64 as laid out (cost's TestCompiledRegimes): the report is
// predicted as laid out under an 80 GiB capacity, at the capacity under
// 62 (XLA recomputing to its limit), and at the needed peak under 50,
// which refuses an out-of-memory case; refusal and the needed error
// weigh the needed peak, whatever the report.
func TestMemoryResultPredictsXLAsReport(t *testing.T) {
	g := int64(unit.GiB)
	mem := sixtyGiBJob(6 * unit.GiB)
	for _, c := range []struct {
		kind              string
		capacity, want    int64
		squeezed, atLimit bool
		refused           bool
	}{
		{KindMemoryAnalysis, 80 * g, 64 * g, false, false, false},
		{KindMemoryAnalysis, 62 * g, 62 * g, true, true, false},
		{KindOOM, 50 * g, 60 * g, true, false, true},
	} {
		mc := MemoryCase{Kind: c.kind, Scope: ScopeTotal, ReportedBytes: 61 * g, CapacityBytes: c.capacity}
		r := memoryResult(mc, mem, 1)
		if r.Predicted != c.want || r.Squeezed != c.squeezed || r.AtLimit != c.atLimit || r.Refused != c.refused || r.Needed != 60*g {
			t.Errorf("%s under %d GiB: predicted %d GiB, squeezed %v, at the limit %v, refused %v, needed %d GiB; want %d, %v, %v, %v, 60",
				c.kind, c.capacity/g, r.Predicted/g, r.Squeezed, r.AtLimit, r.Refused, r.Needed/g, c.want/g, c.squeezed, c.atLimit, c.refused)
		}
		if want := float64(60-61) / 61; math.Abs(r.NeededError-want) > 1e-12 {
			t.Errorf("%s: needed error %v, want %v", c.kind, r.NeededError, want)
		}
	}
}

// TestMemoryResultWeighsTheNeededPeak: a job that needs 60 GiB and lays
// out 88 (30 GiB of recomputable exponentials beside 8 of logits, over a
// 10 GiB layer phase) against 80 GiB ran out of
// memory: cost predicts XLA squeezing it to 80, but refusal and the
// at-the-edge warning weigh the 60 it needs, which leaves 20 GiB, more
// than the dense band's 20 % of 60: neither refused nor warned (weighing
// the prediction would have warned). As a temp-scope case on a chip of
// two JAX devices (20 GiB of arguments a chip, so 10 a device) with 35
// GiB of temporaries allowed a device: the limit is 35 + 10 a device, 90
// a chip, which the laid-out peak fits: 88 / 2 - 10 = 34 GiB of
// temporaries a device, needing 60 / 2 - 10 = 20.
func TestMemoryResultWeighsTheNeededPeak(t *testing.T) {
	g := int64(unit.GiB)
	mem := sixtyGiBJob(30 * unit.GiB)
	r := memoryResult(MemoryCase{Kind: KindOOM, Scope: ScopeTotal, ReportedBytes: 85 * g, CapacityBytes: 80 * g}, mem, 1)
	if r.Predicted != 80*g || !r.AtLimit || r.Refused || r.Warned {
		t.Errorf("OOM at 80 GiB: predicted %d GiB, at the limit %v, refused %v, warned %v; want 80, true, false, false", r.Predicted/g, r.AtLimit, r.Refused, r.Warned)
	}
	r = memoryResult(MemoryCase{Kind: KindMemoryAnalysis, Scope: ScopeTemp, ReportedBytes: 34 * g, CapacityBytes: 35 * g}, mem, 2)
	if r.Predicted != 34*g || r.Squeezed || r.Needed != 20*g || r.Arguments != 10*g {
		t.Errorf("temp scope on two devices: predicted %d GiB, squeezed %v, needed %d, arguments %d; want 34, false, 20, 10", r.Predicted/g, r.Squeezed, r.Needed/g, r.Arguments/g)
	}
}

// sixtyGiBJob is a job that needs 60 GiB a chip (20 of state, 30 of held
// activations, a 10 GiB layer phase) whose output phase holds 8 GiB of
// logits and exps of recomputable exponentials.
func sixtyGiBJob(exps unit.Bytes) cost.Memory {
	return cost.Memory{Weights: 10 * unit.GiB, Optimizer: 10 * unit.GiB, Activations: 30 * unit.GiB, Transient: 10 * unit.GiB, Phases: []cost.Phase{
		{Name: cost.PhaseLayerBackward, Buffers: []cost.Buffer{{Name: "a", Bytes: 10 * unit.GiB}}},
		{Name: cost.PhaseOutput, Buffers: []cost.Buffer{{Name: "logits", Bytes: 8 * unit.GiB}},
			Recomputable: []cost.Buffer{{Name: cost.BufferLossExponentials, Bytes: exps}}},
	}}
}

// TestFixedConfigurationsFit: MaxText fixed the two v4 scripts' AOT
// out-of-memory failures by adding num_vocab_tiling=8 and attention=flash
// (PR #4117, 2b78bfa0 for 52b.sh on v4-384; PR #4081, 0ad8d3f7 for 22b.sh
// on v4-128), and both PRs report "Compilation completed successfully".
// The fixed configuration must fit the HBM XLA had: the case's stated
// capacity, else cost's usable HBM (what memoryResult holds it to).
func TestFixedConfigurationsFit(t *testing.T) {
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	est := cost.NewEstimator()
	fixed := map[string]bool{"mt-52b-v4-384": true, "mt-22b-v4-128-pdb13": true}
	for _, c := range cases {
		if !fixed[c.ID] {
			continue
		}
		delete(fixed, c.ID)
		c.VocabTiles, c.Attention = 8, "flash"
		j, m, err := c.Run(c.ID).Setup()
		if err != nil {
			t.Fatalf("%s fixed: %v", c.ID, err)
		}
		mem, err := est.Memory(j, m)
		if err != nil {
			t.Fatalf("%s fixed: %v", c.ID, err)
		}
		limit := c.CapacityBytes
		if limit == 0 {
			limit = int64(mem.Usable)
		}
		if got := int64(mem.Total()); got > limit {
			t.Errorf("%s with num_vocab_tiling 8 and flash: needs %d bytes, want at most %d (it compiled)", c.ID, got, limit)
		}
	}
	for id := range fixed {
		t.Errorf("memory.yaml has no case %s", id)
	}
}

// TestCompareLogReserve: the runtime's failure to load follows a compile
// that passed against the device's XLA capacity, so the prediction is the
// step as laid out at that capacity, and the refusal weighs the needed
// peak against it, not against the reservable (review 159 #2). By hand,
// sixtyGiBJob(4 GiB) needs 60 GiB (20 of arguments) and lays out 62 (the
// output phase's 8 + 4 over the 10 GiB transient): temporaries 42 as laid
// out, 40 needed. At 70 GiB of capacity the prediction is 42 against the
// 43 reserved, held to 70 − 20 = 50, not refused; the reservable's 30
// (which read 40 needed, refused) is no limit. At 61 GiB the laid-out step
// does not fit and the needed one does: XLA recomputes to the capacity,
// 61 − 20 = 41, at the limit.
func TestCompareLogReserve(t *testing.T) {
	g := int64(unit.GiB)
	l := CompileLog{Kind: KindOOM, Scope: ScopeTemp, Message: MessageReserve, Reported: 43 * g, Capacity: 30 * g}
	for _, tt := range []struct {
		capacity         unit.Bytes
		predicted, limit int64
		atLimit, refused bool
	}{
		{70 * unit.GiB, 42 * g, 50 * g, false, false},
		{61 * unit.GiB, 41 * g, 41 * g, true, false},
		{59 * unit.GiB, 40 * g, 39 * g, false, true}, // needs 60: above the device, refused
	} {
		mem := sixtyGiBJob(4 * unit.GiB)
		mem.XLACapacity, mem.Usable = tt.capacity, tt.capacity
		r := CompareLog(l, mem, 1)
		if r.Predicted != tt.predicted || r.Limit != tt.limit || r.AtLimit != tt.atLimit || r.Refused != tt.refused || r.Case.CapacityBytes != tt.limit {
			t.Errorf("capacity %v: predicted %d GiB, limit %d, at the limit %v, refused %v; want %d, %d, %v, %v",
				tt.capacity, r.Predicted/g, r.Limit/g, r.AtLimit, r.Refused, tt.predicted/g, tt.limit/g, tt.atLimit, tt.refused)
		}
	}
}
