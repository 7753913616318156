package validate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"shardlab/cost"
)

// CompileLog is what a compile of one training step said of its HBM, per
// JAX device, read from the text of a log by ParseCompileLog. Kind and
// Scope say what the reported bytes are, as in the memory table:
// KindOOM with the bytes the program needed (an out-of-memory message,
// Message says which), or KindCompiledUsage for a program that fit
// ("Total hbm usage >= X"), or KindMemoryAnalysis for jax's
// memory_analysis (total = argument + output + temp − alias); ScopeTemp
// where only XLA's temporaries are known. An out-of-memory message of a
// TensorCore's scratch memory (MessageScratch) has Space "vmem" or
// "smem", no Scope, and its bytes (0 where not printed) are of that
// memory, not of HBM.
type CompileLog struct {
	Kind  string `json:"kind"`
	Scope string `json:"scope,omitempty"`
	// Message is the out-of-memory message's form (MessageUsed, …), ""
	// for a report of a program that compiled.
	Message string `json:"message,omitempty"`
	// Space is the memory an out-of-memory message ran out of where it is
	// not HBM: "vmem" or "smem".
	Space string `json:"memory_space,omitempty"`
	// Reported is the program's bytes in that scope; Capacity the HBM
	// XLA had for it (0: not printed).
	Reported int64 `json:"reported_bytes"`
	Capacity int64 `json:"xla_capacity_bytes,omitempty"`
	// Breakdown is what the log splits the bytes into, where it does:
	// memory_analysis's argument, output, alias and temp, or the "Total
	// hbm usage" block's arguments and program (as Argument and Temp).
	Breakdown Breakdown `json:"breakdown,omitzero"`
	// UsageBlocks is how many "Total hbm usage" blocks the log holds (XLA
	// prints one for each program it compiles: the training step, and
	// small ones beside it); the largest is read.
	UsageBlocks int `json:"usage_blocks,omitempty"`
	// Lines are the log lines the numbers were read from.
	Lines []string `json:"lines"`
}

// ErrInvalidLog is wrapped by the errors of a compile log that is not
// what it claims (a size that is not one, a report that does not add up).
// It is an ErrInvalid, named for what it is.
var ErrInvalidLog error = invalidLog{}

type invalidLog struct{}

func (invalidLog) Error() string { return "invalid compile log" }

// Is makes ErrInvalidLog an ErrInvalid.
func (invalidLog) Is(target error) bool { return target == ErrInvalid }

// ErrNoMemoryReport is returned for a log with no memory report in it.
var ErrNoMemoryReport = errors.New("no memory report")

var (
	// "Total hbm usage >= 46.85G:" then "reserved 260.00M", "program
	// 46.60G", "arguments 0B" on lines of their own, or on the same line
	// after it, as XLA's one-line out-of-memory message has them
	// ("Total hbm usage >= 49.34G: reserved 3.12M program unknown size
	// arguments 49.34G": openxla/xla docs/errors/error_1000.md in a version
	// before @49aac430, which the search corpus holds without its commit;
	// "unknown size" is no size and is not read).
	reTotalUsage  = regexp.MustCompile(`Total hbm usage >= ([0-9.]+[KMGTPE]?B?)`)
	reUsageLine   = regexp.MustCompile(`^\s*(reserved|program|arguments)\s+([0-9.]+[KMGTPE]?B?)\s*$`)
	reUsageInline = regexp.MustCompile(`\b(reserved|program|arguments)\s+([0-9.]+[KMGTPE]?B?)(?:\s|$)`)
	// glog's prefix, which XLA's TPU compiler puts on each line of the
	// block where its INFO lines are logged ("I0320 08:15:02.123456 1234
	// deepsea_compiler_backend.cc:2167] reserved 204B"): severity, date,
	// time, thread, file:line.
	reGlogPrefix = regexp.MustCompile(`^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.\-]+:\d+\] `)
	// jax's CompiledMemoryStats repr: "argument_size_in_bytes=23352871936".
	// host_temp_size_in_bytes is what XLA places in pinned host memory
	// (offloaded activations).
	// Its sizes are taken as any token up to a comma, parenthesis or
	// space, for parseAnalysis to refuse by name what is not one (-5).
	reStats = regexp.MustCompile(`\b(argument|output|alias|temp|host_temp|generated_code)_size_in_bytes=([^\s,)]*)`)
	// MaxText's print of it (max_utils.print_compiled_memory_stats, GB =
	// 1024³ bytes): "Total estimated memory size: 100.4 GB, estimated
	// output size: 44.5 GB, estimated temp size: 55.9 GB, estimated
	// argument size: 44.5 GB", and its older wording "Total memory size:
	// 70.0 GB, Output size: 44.5 GB, Temp size: 25.5 GB, Argument size:
	// 44.5 GB".
	reMaxText      = regexp.MustCompile(`(?i)\b(host )?(output|temp|argument) size: ([^\s,]+) GB`)
	reMaxTextTotal = regexp.MustCompile(`(?i)\btotal (?:estimated )?memory size: ([0-9.]+) GB`)
)

// maxLogLine is the longest line ParseCompileLog reads; longer ones (an
// HLO dump) are skipped.
const maxLogLine = 1 << 16

// ParseCompileLog reads a compile log: XLA's out-of-memory messages (of
// HBM: hbmForms; of a TensorCore's scratch memory: MessageScratch), its
// "Total hbm usage" block, jax's memory_analysis repr (what MaxText's
// train_compile prints as "Memory analysis: ...") or MaxText's formatted
// print of it. XLA's K, M, G, T and E are binary (its 30.75G on v4 is the
// 32 GiB less the 1.25G it reserves), and so is MaxText's GB. Where a log
// holds several reports the first HBM out-of-memory message wins, then a
// scratch memory's (the compile failed, whatever else the log says),
// then the largest usage block (a log has one for each program XLA
// compiled; the training step's is the largest), then the last memory
// analysis.
func ParseCompileLog(text string) (CompileLog, error) {
	var oom, scratch, usage, analysis *CompileLog
	blocks := 0
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if len(line) > maxLogLine {
			continue
		}
		var err error
		if oom == nil {
			if oom, err = parseOOM(line); err != nil {
				return CompileLog{}, err
			}
		}
		if scratch == nil {
			if scratch, err = parseScratch(lines, i); err != nil {
				return CompileLog{}, err
			}
		}
		if u, err := parseUsage(lines, i); err != nil {
			return CompileLog{}, err
		} else if u != nil {
			blocks++
			if usage == nil || u.Reported > usage.Reported {
				usage = u
			}
		}
		if a, ok, err := parseAnalysis(line); err != nil {
			return CompileLog{}, err
		} else if ok {
			analysis = &a
		}
	}
	if usage != nil {
		usage.UsageBlocks = blocks
	}
	return chooseReport(oom, scratch, usage, analysis)
}

// parseUsage reads XLA's "Total hbm usage" block starting on lines[i], with
// its arguments and program on that line after it or on the next seven
// up to the next block (glog's prefix stripped); nil where lines[i] does not start one.
func parseUsage(lines []string, i int) (*CompileLog, error) {
	loc := reTotalUsage.FindStringSubmatchIndex(lines[i])
	if loc == nil {
		return nil, nil
	}
	total, err := logBytes(lines[i][loc[2]:loc[3]])
	if err != nil {
		return nil, err
	}
	u := CompileLog{Kind: KindCompiledUsage, Scope: ScopeTotal, Reported: total, Lines: []string{strings.TrimSpace(lines[i])}}
	set := func(field, size string) error {
		b, err := logBytes(size)
		switch {
		case err != nil:
			return err
		case field == "arguments":
			u.Breakdown.Argument = b
		case field == "program":
			u.Breakdown.Temp = b
		}
		return nil
	}
	for _, f := range reUsageInline.FindAllStringSubmatch(lines[i][loc[1]:], -1) {
		if err := set(f[1], f[2]); err != nil {
			return nil, err
		}
	}
	for _, next := range lines[i+1 : min(i+8, len(lines))] {
		if reTotalUsage.MatchString(next) {
			break // the next program's block
		}
		f := reUsageLine.FindStringSubmatch(reGlogPrefix.ReplaceAllString(next, ""))
		if f == nil {
			continue
		}
		if err := set(f[1], f[2]); err != nil {
			return nil, err
		}
		u.Lines = append(u.Lines, strings.TrimSpace(next))
	}
	return &u, nil
}

// chooseReport picks the log's report: the HBM out-of-memory message (with
// the usage block's breakdown when it is XLA's compile-time message of
// the total and that block covers it), else a scratch memory's, else the
// usage block, else the memory analysis.
func chooseReport(oom, scratch, usage, analysis *CompileLog) (CompileLog, error) {
	var got *CompileLog
	switch {
	case oom != nil:
		if usage != nil && oom.Scope == ScopeTotal && oom.Message != MessageEarlyAbort && usage.Reported >= oom.Reported {
			oom.Breakdown = usage.Breakdown
			for _, l := range usage.Lines {
				if !slices.Contains(oom.Lines, l) { // the one-line message holds its block
					oom.Lines = append(oom.Lines, l)
				}
			}
		}
		got = oom
	case scratch != nil:
		return *scratch, nil
	case usage != nil:
		got = usage
	case analysis != nil:
		got = analysis
	}
	if got != nil {
		if got.Reported <= 0 || got.Kind == KindOOM && got.Capacity <= 0 {
			return CompileLog{}, fmt.Errorf("validate: %q reports %d bytes of %d, want a positive number of bytes (and of capacity, for an out-of-memory message): %w", got.Lines[0], got.Reported, got.Capacity, ErrInvalidLog)
		}
		return *got, nil
	}
	return CompileLog{}, fmt.Errorf("validate: %w: want XLA's out-of-memory message (\"Used X of Y hbm\", \"Aborting compilation early ... Requires X, has Y available\", \"TensorCore Hbm usage: X, SparseCore Hbm usage Z, exceeding available bytes: Y\", \"HLO temporaries (X) exceeds available HBM (Y)\", or VMEM's), the runtime's \"Attempting to reserve X ... Y reservable\", XLA's \"Total hbm usage >= X\" block, jax's memory_analysis (argument_size_in_bytes=…, temp_size_in_bytes=…) or MaxText's \"estimated temp size: X GB\" line", ErrNoMemoryReport)
}

// parseAnalysis reads one line of jax's memory_analysis repr or of
// MaxText's print of it; ok is false when the line is neither.
func parseAnalysis(line string) (CompileLog, bool, error) {
	b, sizes, err := analysisSizes(line)
	switch {
	case err != nil:
		return CompileLog{}, false, err
	case sizes == "":
		return CompileLog{}, false, nil // no argument or temp size: not a report
	case b.Temp == 0 && b.Argument == 0:
		return CompileLog{}, false, fmt.Errorf("validate: %s: %w; want a positive argument or temp size (the parameters and optimizer state, or the step's temporaries)", sizes, ErrInvalidLog)
	}
	// MaxText prints the total (argument + output + temp − alias) but not
	// the alias: it is what the total leaves.
	if m := reMaxTextTotal.FindStringSubmatch(line); m != nil {
		total, err := logBytes(m[1] + "G")
		if err != nil {
			return CompileLog{}, false, err
		}
		b.Alias = max(b.Argument+b.Output+b.Temp-total, 0)
	}
	total := b.Argument + b.Output + b.Temp - b.Alias
	scope := ScopeTotal
	if b.Argument == 0 && b.Output == 0 {
		scope, total = ScopeTemp, b.Temp
	}
	if total <= 0 {
		return CompileLog{}, false, fmt.Errorf("validate: memory analysis totals %d bytes (argument + output + temp − alias), want a positive number: %w", total, ErrInvalidLog)
	}
	return CompileLog{Kind: KindMemoryAnalysis, Scope: scope, Reported: total, Breakdown: b, Lines: []string{strings.TrimSpace(line)}}, true, nil
}

// analysisSizes reads the sizes of one line of jax's memory_analysis repr
// or of MaxText's print of it; sizes spells those of its argument and
// temp sizes as the line does ("argument_size_in_bytes=0,
// temp_size_in_bytes=0"), "" when it has neither. A size that is not a
// whole number of bytes, 0 or more, is refused by its field's name.
func analysisSizes(line string) (b Breakdown, sizes string, err error) {
	var named []string
	set := func(field string, v int64, spelt string) {
		switch strings.ToLower(field) {
		case "argument":
			b.Argument = v
		case "output":
			b.Output = v
		case "alias":
			b.Alias = v
		case "temp":
			b.Temp = v
		case "generated_code":
			b.GeneratedCode = v
		case "host_temp", "host temp":
			b.HostTemp = v
		}
		if f := strings.ToLower(field); f == "argument" || f == "temp" {
			named = append(named, spelt)
		}
	}
	for _, m := range reStats.FindAllStringSubmatch(line, -1) {
		v, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || v < 0 || strings.TrimLeft(m[2], "0123456789") != "" {
			return b, "", fmt.Errorf("validate: %s_size_in_bytes=%s: %w; want a whole number of bytes, 0 or more, below 2^63", m[1], m[2], ErrInvalidLog)
		}
		set(m[1], v, m[0])
	}
	for _, m := range reMaxText.FindAllStringSubmatch(line, -1) {
		v, err := logBytes(m[3] + "G")
		if err != nil {
			return b, "", fmt.Errorf("validate: %q: %w; want a number of GB, 0 or more, below 2^32", m[0], ErrInvalidLog)
		}
		set(m[1]+m[2], v, m[0]) // "host temp": offloaded, not HBM
	}
	return b, strings.Join(named, ", "), nil
}

// logBytes reads a size as XLA prints it: a decimal number and an optional
// binary K, M, G, T, P or E, with or without a trailing B ("33.27G", "260.00M",
// "0B").
func logBytes(s string) (int64, error) {
	num := strings.TrimSuffix(s, "B")
	scale := 1.0
	if n := len(num); n > 0 {
		switch num[n-1] {
		case 'K':
			scale, num = 1<<10, num[:n-1]
		case 'M':
			scale, num = 1<<20, num[:n-1]
		case 'G':
			scale, num = 1<<30, num[:n-1]
		case 'T':
			scale, num = 1<<40, num[:n-1]
		case 'P':
			scale, num = 1<<50, num[:n-1]
		case 'E': // "Requires 3.47E, has 14.49G available" (jax-ml/jax issue 7822)
			scale, num = 1<<60, num[:n-1]
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	b := v * scale
	if err != nil || math.IsNaN(b) || math.IsInf(b, 0) || b < 0 || b >= 1<<62 || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("validate: size %q, want a number of bytes with an optional K, M, G, T, P or E (binary, as XLA prints them), below 2^62: %w", s, ErrInvalidLog)
	}
	return int64(math.Round(b)), nil
}

// CompareLog holds a compile log against cost's estimate of the same job
// and layout: mem is cost's per-chip memory and devicesPerChip the chip's
// JAX devices, the unit XLA reports in.
//
// A log that states no capacity (jax's memory analysis) is held to the
// chip's XLA capacity a device (cost.Memory.XLACapacity, hw/xla_hbm.csv),
// which the compile ran against, where its scope is the total: so a
// compile that succeeded gets a verdict (it fits, or compiled where the
// plan said it would not), and XLA's limit is named as XLA's, not as the
// planning limit.
//
// The runtime's failure to load (MessageReserve) is of a program whose
// compile passed, against the device's XLA capacity: its reservable is
// what the runtime had at load beside the arguments and whatever else was
// live, not a limit the compile held the step to. So the prediction is
// the step as compiled at that capacity (its temporaries, as laid out, or
// the capacity where XLA recomputes to fit it), held to the capacity less
// the arguments, and Refused weighs the needed peak against the device's
// capacity, not against the reservable (review 159 #2: 59.26 GiB needed
// against 50.00 reservable read "refused" for a plan that fits with 13.3
// GiB free, and 66.40 reservable was printed as the prediction).
func CompareLog(log CompileLog, mem cost.Memory, devicesPerChip int) MemoryResult {
	capacity := log.Capacity
	switch {
	case log.Message == MessageReserve && mem.XLACapacity > 0:
		capacity = int64(mem.XLACapacityPerDevice(devicesPerChip)) - argumentsPerDevice(mem, devicesPerChip)
	case capacity == 0 && log.Scope == ScopeTotal && mem.XLACapacity > 0:
		capacity = int64(mem.XLACapacityPerDevice(devicesPerChip))
	}
	c := MemoryCase{Kind: log.Kind, Scope: log.Scope, ReportedBytes: log.Reported, CapacityBytes: capacity, Breakdown: log.Breakdown}
	r := memoryResult(c, mem, devicesPerChip)
	r.compareBreakdown(log.Breakdown) // whatever the log's kind: memoryResult compares a memory_analysis case's only
	return r
}
