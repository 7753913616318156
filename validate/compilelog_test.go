package validate

import (
	"errors"
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
	} {
		_, err := ParseCompileLog(tt.log)
		if !errors.Is(err, tt.want) {
			t.Errorf("ParseCompileLog(%q) = %v, want %v", tt.log, err, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "validate: compile log: ") {
			t.Errorf("error %q does not name the compile log", err)
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
	f.Fuzz(func(t *testing.T, log string) {
		got, err := ParseCompileLog(log)
		if err != nil {
			return
		}
		if got.Reported <= 0 || got.Kind == KindOOM && got.Capacity <= 0 {
			t.Errorf("accepted %q as %d bytes", log, got.Reported)
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
