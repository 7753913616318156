package validate

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestParseCompileLog reads each kind of report from the logs the memory
// table quotes (validate/memory.yaml has their sources).
func TestParseCompileLog(t *testing.T) {
	const gib = 1 << 30
	for _, tt := range []struct {
		name, log   string
		kind, scope string
		reported    int64
		capacity    int64
		breakdown   Breakdown
	}{
		{ // AI-Hypercomputer/maxtext PR 4117: 52b.sh on v4-384
			"xla oom", "E1204 jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 33.27G of 30.75G hbm. Exceeded hbm capacity by 2.52G.\n",
			KindOOM, ScopeTotal, 35723390484, 30.75 * gib, Breakdown{}},
		{ // vlasenkoalexey/tpu_performance_autoresearch_wiki, qwen3-jax v015 on v6e-8
			"xla oom with usage block",
			"RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 46.60G of 31.25G hbm. Exceeded hbm capacity by 15.35G.\n\nTotal hbm usage >= 46.85G:\n    reserved        260.00M \n    program          46.60G \n    arguments            0B \n",
			KindOOM, ScopeTotal, 50036368998, 31.25 * gib, Breakdown{Temp: 50036368998}},
		{ // yangwhale/gpu-tpu-pedia: DeepSeek V3 on 64 TPU7x chips
			"hlo temporaries", "total memory required for HLO temporaries (105.73G) exceeds available HBM (94.74G)",
			KindOOM, ScopeTemp, 113526723052, 101726300406, Breakdown{}},
		{ // yangwhale/gpu-tpu-pedia: Hunyuan3 AOT on TPU7x (memory.yaml hy3-v7-64c-pdb12-aot)
			"memory analysis repr",
			"Memory analysis: CompiledMemoryStats(generated_code_size_in_bytes=292657664, argument_size_in_bytes=23352871936, output_size_in_bytes=23351567712, alias_size_in_bytes=23351561216, temp_size_in_bytes=80477396448, host_generated_code_size_in_bytes=0)",
			KindMemoryAnalysis, ScopeTotal, 23352871936 + 23351567712 + 80477396448 - 23351561216, 0,
			Breakdown{Argument: 23352871936, Output: 23351567712, Alias: 23351561216, Temp: 80477396448, GeneratedCode: 292657664}},
		{ // the same compile's stats with the host temporaries jax reports beside them (memory.yaml's breakdown)
			"memory analysis repr with host temp",
			"CompiledMemoryStats(argument_size_in_bytes=23352871936, output_size_in_bytes=23351567712, alias_size_in_bytes=23351561216, temp_size_in_bytes=80477396448, host_temp_size_in_bytes=31809601536)",
			KindMemoryAnalysis, ScopeTotal, 23352871936 + 23351567712 + 80477396448 - 23351561216, 0,
			Breakdown{Argument: 23352871936, Output: 23351567712, Alias: 23351561216, Temp: 80477396448, HostTemp: 31809601536}},
		{ // MaxText's print of a compile that offloads: its host temp size is read, and is not HBM
			"maxtext print with host temp", "Total memory size: 70.0 GB, Output size: 44.5 GB, Temp size: 25.5 GB, Argument size: 44.5 GB, Host temp size: 29.5 GB.",
			KindMemoryAnalysis, ScopeTotal, 70 * gib, 0, Breakdown{Argument: 44.5 * gib, Output: 44.5 * gib, Alias: 44.5 * gib, Temp: 25.5 * gib, HostTemp: 29.5 * gib}},
		{ // MaxText docs understand_logs_and_metrics.md draft: deepseek2-16b on v5p-8
			"maxtext print", "Total memory size: 70.0 GB, Output size: 44.5 GB, Temp size: 25.5 GB, Argument size: 44.5 GB, Host temp size: 0.0 GB.",
			KindMemoryAnalysis, ScopeTotal, 70 * gib, 0, Breakdown{Argument: 44.5 * gib, Output: 44.5 * gib, Alias: 44.5 * gib, Temp: 25.5 * gib}},
		{ // MaxText max_utils.print_compiled_memory_stats @e591f30c wording
			"maxtext estimated print", "Total estimated memory size: 100.4 GB, estimated output size: 44.5 GB, estimated temp size: 55.9 GB, estimated argument size: 44.5 GB, Estimated host temp size: 0.0 GB.",
			KindMemoryAnalysis, ScopeTotal, 107803679130, 0, Breakdown{Argument: 44.5 * gib, Output: 44.5 * gib, Alias: 44.5 * gib, Temp: 60022167962}}, // 55.9 and 100.4 GiB
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCompileLog(tt.log)
			if err != nil {
				t.Fatal(err)
			}
			near := func(a, b int64) bool { return a-b <= 1 && b-a <= 1 }
			if got.Kind != tt.kind || got.Scope != tt.scope || !near(got.Reported, tt.reported) || !near(got.Capacity, tt.capacity) {
				t.Errorf("got %s %s %d of %d, want %s %s %d of %d", got.Kind, got.Scope, got.Reported, got.Capacity, tt.kind, tt.scope, tt.reported, tt.capacity)
			}
			g, w := got.Breakdown, tt.breakdown
			if !near(g.Argument, w.Argument) || !near(g.Output, w.Output) || !near(g.Alias, w.Alias) || !near(g.Temp, w.Temp) || !near(g.GeneratedCode, w.GeneratedCode) || !near(g.HostTemp, w.HostTemp) {
				t.Errorf("breakdown %+v, want %+v", g, w)
			}
			if len(got.Lines) == 0 {
				t.Error("no lines quoted")
			}
		})
	}
}

func TestParseCompileLogRefuses(t *testing.T) {
	for _, tt := range []struct {
		log  string
		want error
	}{
		{"", ErrNoMemoryReport},
		{"step 1 loss 2.3\nstep 2 loss 2.1\n", ErrNoMemoryReport},
		{"Used 1.2.3G of 30.75G hbm", ErrInvalid},
		{"Used 1e30G of 30.75G hbm", ErrInvalidLog},
		{"Used -5G of 30.75G hbm", ErrInvalidLog},
		{"Used NaNG of 30.75G hbm", ErrInvalidLog},
		{"Used 99999999999999T of 30.75G hbm", ErrInvalid},
		{"argument_size_in_bytes=99999999999999999999 temp_size_in_bytes=1", ErrInvalid},
		{"argument_size_in_bytes=0 output_size_in_bytes=5 alias_size_in_bytes=10 temp_size_in_bytes=1", ErrInvalid},
		{"Total hbm usage >= 0B:", ErrInvalid},
		{"Used 0B of 30.75G hbm", ErrInvalid},
		{"Used 3G of 0B hbm", ErrInvalid},
		{"Aborting compilation early because it's unlikely to have enough memory. Requires 3.84X, has 90.96G available.", ErrInvalidLog},
		{"Attempting to reserve -1G at the bottom of memory. That was not possible. There are 1G free, 0B reserved, and 1G reservable.", ErrInvalidLog},
		{"TPU TensorCore Hbm usage: 1G, SparseCore Hbm usage NaNG, exceeding available bytes: 95.74G", ErrInvalidLog},
		{"TPU TensorCore Hbm usage: 1G, SparseCore Hbm usage 2G, exceeding available bytes: 1.2.3G.", ErrInvalidLog}, // the period is the sentence's, the size still refused
		{"Ran out of memory in memory space vmem. Used 1.2.3M of 16.00M vmem.", ErrInvalidLog},
		{"Ran out of memory in memory space hbm. Used 9E of 95.74G hbm", ErrInvalidLog}, // 2^63 bytes and more
	} {
		_, err := ParseCompileLog(tt.log)
		if !errors.Is(err, tt.want) {
			t.Errorf("ParseCompileLog(%q) = %v, want %v", tt.log, err, tt.want)
		}
		if err != nil && (!strings.HasPrefix(err.Error(), "validate: ") || strings.Contains(err.Error(), "compile log:")) {
			t.Errorf("error %q: want the package's name and the detail, no \"compile log:\" for a front end that names the log to repeat", err)
		}
	}
}

// TestParseCompileLogNamesTheField: a memory analysis with a size that
// cannot be (negative, or every size 0) is refused naming the field as the
// log spells it; it was read with the negative size left out (its scope
// silently "temp"), or as "no memory report" naming nothing.
func TestParseCompileLogNamesTheField(t *testing.T) {
	for _, tt := range []struct{ log, want string }{
		{"Memory analysis: CompiledMemoryStats(argument_size_in_bytes=-5, output_size_in_bytes=0, alias_size_in_bytes=0, temp_size_in_bytes=1000)",
			"argument_size_in_bytes=-5: invalid compile log; want a whole number of bytes, 0 or more"},
		{"CompiledMemoryStats(argument_size_in_bytes=8, output_size_in_bytes=8, alias_size_in_bytes=8, temp_size_in_bytes=-1)",
			"temp_size_in_bytes=-1: invalid compile log"},
		{"CompiledMemoryStats(argument_size_in_bytes=8, output_size_in_bytes=8, alias_size_in_bytes=8, temp_size_in_bytes=1.5e9)",
			"temp_size_in_bytes=1.5e9: invalid compile log"},
		{"Memory analysis: CompiledMemoryStats(generated_code_size_in_bytes=0, argument_size_in_bytes=0, output_size_in_bytes=0, alias_size_in_bytes=0, temp_size_in_bytes=0)",
			"argument_size_in_bytes=0, temp_size_in_bytes=0: invalid compile log; want a positive argument or temp size"},
		{"Total memory size: 0.0 GB, Output size: 0.0 GB, Temp size: 0.0 GB, Argument size: 0.0 GB",
			"Temp size: 0.0 GB, Argument size: 0.0 GB: invalid compile log; want a positive argument or temp size"},
		{"Total memory size: 70.0 GB, Output size: 44.5 GB, Temp size: -25.5 GB, Argument size: 44.5 GB",
			`"Temp size: -25.5 GB": invalid compile log; want a number of GB, 0 or more`},
	} {
		_, err := ParseCompileLog(tt.log)
		if !errors.Is(err, ErrInvalidLog) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCompileLog(%q) = %v, want an ErrInvalidLog saying %q", tt.log, err, tt.want)
		}
	}
}

// FuzzParseCompileLog: the parser never panics, and what it accepts
// reports a positive number of bytes of a known kind and scope.
func FuzzParseCompileLog(f *testing.F) {
	f.Add("Ran out of memory in memory space hbm. Used 33.27G of 30.75G hbm.")
	f.Add("Total hbm usage >= 46.85G:\n    reserved        260.00M \n    program          46.60G \n    arguments            0B \n")
	f.Add("CompiledMemoryStats(argument_size_in_bytes=2, output_size_in_bytes=2, alias_size_in_bytes=2, temp_size_in_bytes=8)")
	f.Add("Total memory size: 70.0 GB, Output size: 44.5 GB, Temp size: 25.5 GB, Argument size: 44.5 GB")
	f.Add("CompiledMemoryStats(argument_size_in_bytes=-5, output_size_in_bytes=0, alias_size_in_bytes=0, temp_size_in_bytes=8)")
	f.Add("CompiledMemoryStats(argument_size_in_bytes=0, output_size_in_bytes=0, alias_size_in_bytes=0, temp_size_in_bytes=0)")
	for _, tt := range oomForms { // review 152 #2's forms, as their sources print them, and review 159's period
		f.Add(tt.log)
	}
	f.Add("I1207 21:50:01.100000 1234 deepsea_compiler_backend.cc:2163] Total hbm usage >= 87.90G:\nI1207 21:50:01.100001 1234 deepsea_compiler_backend.cc:2167] arguments 22.44G\nTotal hbm usage >= 260.14M:\n")
	f.Add("Ran out of memory in memory space vmem while allocating on stack for %k\nScoped allocation with size 1.2.3M and limit 16.00M")
	f.Add("TPU TensorCore Hbm usage: 1G, SparseCore Hbm usage 2G, exceeding available bytes: 1.2.3G.") // a period after a size that is not one
	f.Add("TPU TensorCore Hbm usage: 104.82G, SparseCore Hbm usage 1.10G, exceeding available bytes: 95.74G..")
	f.Fuzz(func(t *testing.T, log string) {
		got, err := ParseCompileLog(log)
		if err != nil {
			return
		}
		if got.Message == MessageScratch {
			// a scratch memory's bytes, where printed, are not HBM's
			if got.Kind != KindOOM || got.Space == "" || got.Scope != "" || got.Reported < 0 || got.Capacity < 0 {
				t.Errorf("accepted %q as a scratch memory's message %+v", log, got)
			}
			return
		}
		if got.Reported <= 0 || got.Kind == KindOOM && got.Capacity <= 0 {
			t.Errorf("accepted %q as %d bytes", log, got.Reported)
		}
		if got.Kind == KindCompiledUsage && got.UsageBlocks < 1 {
			t.Errorf("accepted %q as a usage block of %d blocks", log, got.UsageBlocks)
		}
		switch got.Kind {
		case KindOOM, KindCompiledUsage, KindMemoryAnalysis:
		default:
			t.Errorf("kind %q", got.Kind)
		}
		if got.Scope != ScopeTotal && got.Scope != ScopeTemp {
			t.Errorf("scope %q", got.Scope)
		}
	})
}

// oomForms are the out-of-memory messages ParseCompileLog reads beside
// "Used X of Y hbm", each as its source prints it (review 152 #2).
var oomForms = []struct {
	name, log          string
	message, scope     string
	reported, capacity int64
	space              string
}{
	// openxla/xla docs/errors/error_1000.md @49aac430, its second sample
	{"early abort", "RESOURCE_EXHAUSTED: Compilation failure: Aborting compilation early because it's unlikely to have enough memory. Requires 3.84T, has 90.96G available. If more detailed logging is desired, set --xla_tpu_impure_oom_fast_exit_threshold=-1",
		MessageEarlyAbort, ScopeTotal, int64(math.Round(3.84 * (1 << 40))), bytesOf(90.96), ""},
	// jax-ml/jax issue 7822 (hawkinsp, 2023-11-17): an exbibyte
	{"early abort in E", "Compilation failure: Aborting compilation early because it's unlikely to have enough memory. Requires 3.47E, has 14.49G available.",
		MessageEarlyAbort, ScopeTotal, int64(math.Round(3.47 * (1 << 60))), bytesOf(14.49), ""},
	// openxla/xla docs/errors/error_0101.md @11903d43
	{"runtime reserve", "XlaRuntimeError: RESOURCE_EXHAUSTED: Error loading program 'jit_embedding_pipeline_step_fn': Attempting to reserve 29.49G at the bottom of memory. That was not possible. There are 147.64M free, 0B reserved, and 147.64M reservable. Scope: unknown..: while running replica 0 and partition 34 of a replicated computation (other replicas may have failed as well).",
		MessageReserve, ScopeTemp, bytesOf(29.49), int64(math.Round(147.64 * (1 << 20))), ""},
	// openxla/xla docs/errors/error_1002.md @27585e26 (and tensorflow/
	// tensorflow third_party/xla/docs/errors/error_1000.md @3457ee47): X + Z
	{"tensorcore and sparsecore", "XlaRuntimeError: RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, exceeding available bytes: 95.74G",
		MessageTensorCore, ScopeTotal, bytesOf(34.82) + bytesOf(174.10), bytesOf(95.74), ""},
	// openxla/xla docs/errors/error_1001.md @82fc6c95: no sizes printed
	{"vmem, scoped", "RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on stack for %my-custom-kernel = bf16[2048,4096]{1,0:T(8,128)(2,1)} custom-call(...) ...",
		MessageScratch, "", 0, 0, "vmem"},
	// the scoped message's sizes a line later (E1001 as a MaxText user's
	// log quotes it, in the search corpus)
	{"vmem, scoped with sizes", "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom:\nRan out of memory in memory space vmem while allocating on stack for %splash_mha_fwd...\nScoped allocation with size 19.85M and limit 16.00M exceeded scoped vmem limit by 3.85M.",
		MessageScratch, "", int64(math.Round(19.85 * (1 << 20))), 16 << 20, "vmem"},
	// pytorch/xla issue 9524
	{"vmem, used", "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem. Used 32.42M of 16.00M vmem. Exceeded vmem capacity by 16.42M",
		MessageScratch, "", int64(math.Round(32.42 * (1 << 20))), 16 << 20, "vmem"},
	// vllm-project/vllm issue 8318
	{"smem", "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space smem. Used 1.00M of 1.00M smem. Exceeded smem capacity by 1.7K.",
		MessageScratch, "", 1 << 20, 1 << 20, "smem"},
	// error_1002.md's form with the sentence's period after its capacity,
	// as XLA ends its other messages ("Exceeded hbm capacity by 6.19G."):
	// review 159 found it refused as size "95.74G." (exit 2)
	{"tensorcore and sparsecore, a period after", "RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 104.82G, SparseCore Hbm usage 1.10G, exceeding available bytes: 95.74G.",
		MessageTensorCore, ScopeTotal, bytesOf(104.82) + bytesOf(1.10), bytesOf(95.74), ""},
	// and with words after it, the capacity still read to its last digit
	{"tensorcore and sparsecore, words after", "TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, exceeding available bytes: 95.74G. Try a smaller batch",
		MessageTensorCore, ScopeTotal, bytesOf(34.82) + bytesOf(174.10), bytesOf(95.74), ""},
}

// TestParseCompileLogOOMForms reads each form of oomForms; a scratch
// memory's message wins over a report of HBM in the same log (the compile
// failed), an HBM out-of-memory message over it.
func TestParseCompileLogOOMForms(t *testing.T) {
	for _, tt := range oomForms {
		got, err := ParseCompileLog(tt.log)
		near := func(a, b int64) bool { return a-b <= 1 && b-a <= 1 }
		if err != nil || got.Kind != KindOOM || got.Message != tt.message || got.Scope != tt.scope || got.Space != tt.space ||
			!near(got.Reported, tt.reported) || !near(got.Capacity, tt.capacity) || got.Compiled() {
			t.Errorf("%s: ParseCompileLog = %+v, %v; want %s %s %q %d of %d", tt.name, got, err, tt.message, tt.scope, tt.space, tt.reported, tt.capacity)
		}
	}
	analysis := "CompiledMemoryStats(argument_size_in_bytes=2, output_size_in_bytes=2, alias_size_in_bytes=2, temp_size_in_bytes=8)\n"
	if got, err := ParseCompileLog(analysis + oomForms[4].log); err != nil || got.Message != MessageScratch {
		t.Errorf("a memory analysis and a vmem message: %+v, %v, want the vmem message", got, err)
	}
	if got, err := ParseCompileLog(oomForms[4].log + "\nUsed 101G of 95.74G hbm"); err != nil || got.Message != MessageUsed {
		t.Errorf("a vmem message and an HBM one: %+v, %v, want the HBM one", got, err)
	}
}

// TestParseCompileLogUsageBlocks: a log with a block per XLA program
// (glog-prefixed, as XLA's TPU compiler logs them) is read at its
// largest, the training step's, with its breakdown, and says how many it
// saw (review 152 #5: it read the last, a small program's 0.25 GiB, and
// lost the breakdown to the prefix). The one-line out-of-memory message
// holds its block on the same line: its arguments are read and the line
// is quoted once.
func TestParseCompileLogUsageBlocks(t *testing.T) {
	glog := `I1207 21:50:01.100000 1234 deepsea_compiler_backend.cc:2163] Total hbm usage >= 87.90G:
I1207 21:50:01.100001 1234 deepsea_compiler_backend.cc:2167]     reserved        260.00M
I1207 21:50:01.100002 1234 deepsea_compiler_backend.cc:2167]     program          65.20G
I1207 21:50:01.100003 1234 deepsea_compiler_backend.cc:2167]     arguments        22.44G
I1207 21:52:01.100000 1234 deepsea_compiler_backend.cc:2163] Total hbm usage >= 260.14M:
I1207 21:52:01.100001 1234 deepsea_compiler_backend.cc:2167]     reserved           204B
I1207 21:52:01.100002 1234 deepsea_compiler_backend.cc:2167]     program          70.0K
I1207 21:52:01.100003 1234 deepsea_compiler_backend.cc:2167]     arguments            0B
`
	got, err := ParseCompileLog(glog)
	if err != nil || got.Reported != bytesOf(87.90) || got.UsageBlocks != 2 || got.Breakdown.Argument != bytesOf(22.44) || got.Breakdown.Temp != bytesOf(65.20) || len(got.Lines) != 4 {
		t.Errorf("glog blocks: %+v, %v; want the 87.90G block of 2, arguments 22.44G, program 65.20G, its 4 lines", got, err)
	}
	// error_1000.md before @49aac430 (the search corpus holds the version
	// without its commit): the message and its block on one line
	one := "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 101.93G of 95.74G hbm. Exceeded hbm capacity by 6.19G. Total hbm usage >= 101.93G: reserved 3.12M program unknown size arguments 22.44G"
	got, err = ParseCompileLog(one)
	if err != nil || got.Message != MessageUsed || got.Breakdown.Argument != bytesOf(22.44) || got.Breakdown.Temp != 0 || len(got.Lines) != 1 {
		t.Errorf("one-line message: %+v, %v; want arguments 22.44G, no program size, the line once", got, err)
	}
}

// TestParseCompileLogReadsTheMemoryTable: every quote of the memory table
// that holds a report ParseCompileLog reads, read as the table states it
// (kind, scope, bytes, and the capacity where the quote prints one): one
// parser for check's logs and validate's table. The runtime's reservation
// (tpurecipes-dsv3-v5p256-pdb5, MessageReserve) is among them.
func TestParseCompileLogReadsTheMemoryTable(t *testing.T) {
	cases, err := MemoryCases()
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	for _, c := range cases {
		l, err := ParseCompileLog(c.Quote)
		if errors.Is(err, ErrNoMemoryReport) {
			continue
		}
		read[c.ID] = true
		if err != nil || l.Kind != c.Kind || l.Scope != c.Scope || l.Reported != c.ReportedBytes || l.Capacity != 0 && l.Capacity != c.CapacityBytes {
			t.Errorf("%s: quote read as %+v, %v; the table says %s %s %d of %d", c.ID, l, err, c.Kind, c.Scope, c.ReportedBytes, c.CapacityBytes)
		}
	}
	if !read[LoadShortfallCase] || len(read) < 5 {
		t.Errorf("read %v, want %s and the 4 other quotes that print a report", read, LoadShortfallCase)
	}
}
