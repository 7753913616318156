package validate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The out-of-memory messages ParseCompileLog reads (CompileLog.Message),
// each with what its capacity is the capacity of.
const (
	// MessageUsed is XLA's compile-time "Ran out of memory in memory space
	// hbm. Used X of Y hbm" (openxla/xla docs/errors/error_1000.md
	// @49aac430): the program's bytes against what a JAX device holds.
	MessageUsed = "used_of_hbm"
	// MessageTensorCore is XLA's "TPU TensorCore Hbm usage: X, SparseCore
	// Hbm usage Z, exceeding available bytes: Y" (docs/errors/
	// error_1002.md @27585e26; tensorflow/tensorflow third_party/xla/docs/
	// errors/error_1000.md @3457ee47): X + Z against a device's Y (95.74G
	// in its sample, v5p's, hw/xla_hbm.csv).
	MessageTensorCore = "tensorcore_sparsecore"
	// MessageTemporaries is "total memory required for HLO temporaries (X)
	// exceeds available HBM (Y)": the temporaries alone (scope temp).
	MessageTemporaries = "hlo_temporaries"
	// MessageEarlyAbort is XLA's "Aborting compilation early because it's
	// unlikely to have enough memory. Requires X, has Y available"
	// (error_1000.md @49aac430): an estimate XLA makes before it lays the
	// step out, when no rematerialization could fit it. The docs do not
	// say what Y leaves out (their sample's 90.96G is no chip's capacity
	// in hw/xla_hbm.csv), so it is held only to be at most a device's.
	MessageEarlyAbort = "early_abort"
	// MessageReserve is the runtime's "Attempting to reserve X at the
	// bottom of memory. That was not possible. There are F free, R
	// reserved, and Y reservable." (docs/errors/error_0101.md @11903d43):
	// the compile passed and loading the program failed. X is the
	// program's temporaries and Y what the arguments leave of a device
	// (memory.yaml's tpurecipes-dsv3-v5p256-pdb5: 66.40 = 95.74 - 29.3
	// GiB of arguments), scope temp.
	MessageReserve = "runtime_reserve"
	// MessageScratch is an out-of-memory in a TensorCore's on-chip
	// scratch memory, VMEM or SMEM, not HBM: "Ran out of memory in
	// memory space vmem" (docs/errors/error_1001.md @82fc6c95, a kernel's
	// scoped allocation; pytorch/xla issue 9524: "Used 32.42M of 16.00M
	// vmem"; vllm-project/vllm issue 8318: "Used 1.00M of 1.00M smem").
	// The plan's HBM model does not cover it.
	MessageScratch = "scratch_memory"
)

var (
	// XLA's TPU out-of-memory message: "Ran out of memory in memory space
	// hbm. Used 33.27G of 30.75G hbm. Exceeded hbm capacity by 2.52G."
	// Its sizes are taken as any token, for logBytes to refuse by name
	// what is not a size (1e30G, -5G, NaNG).
	reUsed = regexp.MustCompile(`Used (\S+) of (\S+) hbm`)
	// "total memory required for HLO temporaries (105.73G) exceeds
	// available HBM (94.74G)".
	reTemporaries = regexp.MustCompile(`HLO temporaries \(([0-9.]+[KMGTPE]?B?)\) exceeds available HBM \(([0-9.]+[KMGTPE]?B?)\)`)
	// Its last size ends the sentence: anchored, as the others are by the
	// word after them, by what may follow it (a period, a space, a comma
	// or the line's end), so that "exceeding available bytes: 95.74G."
	// reads 95.74G (review 159: it read "95.74G." and refused it).
	reTensorCore = regexp.MustCompile(`TensorCore Hbm usage:? ([^\s,]+),? SparseCore Hbm usage:? ([^\s,]+),? exceeding available bytes:? ([^\s,]+?)\.?(?:[\s,]|$)`)
	reEarlyAbort = regexp.MustCompile(`Aborting compilation early because it's unlikely to have enough memory\. Requires ([^\s,]+), has ([^\s,]+) available`)
	// The runtime's message, and memory.yaml's quote of it, which elides
	// the middle ("... 66.40G reservable").
	reReserve = regexp.MustCompile(`Attempting to reserve (\S+) at the bottom of memory.*?(\S+) reservable`)
	reScratch = regexp.MustCompile(`Ran out of memory in memory space (vmem|smem)`)
	// the scratch memory's sizes, where printed: "Used 32.42M of 16.00M
	// vmem" or error_1001's "Scoped allocation with size 19.85M and limit
	// 16.00M" (a line later, in the logs quoted in the search corpus)
	reScratchUsed   = regexp.MustCompile(`Used (\S+) of (\S+) (?:vmem|smem)`)
	reScratchScoped = regexp.MustCompile(`Scoped allocation with size (\S+) and limit (\S+)`)
)

// hbmForms are the HBM out-of-memory messages, in the order tried on a
// line; sum says that the first two sizes add up to the reported bytes
// (TensorCore's and SparseCore's), the last size being the capacity.
var hbmForms = []struct {
	re      *regexp.Regexp
	message string
	scope   string
	sum     bool
}{
	{reUsed, MessageUsed, ScopeTotal, false},
	{reTemporaries, MessageTemporaries, ScopeTemp, false},
	{reTensorCore, MessageTensorCore, ScopeTotal, true},
	{reEarlyAbort, MessageEarlyAbort, ScopeTotal, false},
	{reReserve, MessageReserve, ScopeTemp, false},
}

// parseOOM reads an HBM out-of-memory message on a line (hbmForms); nil
// where the line has none.
func parseOOM(line string) (*CompileLog, error) {
	for _, f := range hbmForms {
		m := f.re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		sizes := make([]int64, len(m)-1)
		var errs []error
		for i, s := range m[1:] {
			var err error
			sizes[i], err = logBytes(s)
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		reported, capa := sizes[0], sizes[len(sizes)-1]
		if f.sum {
			reported += sizes[1]
		}
		return &CompileLog{Kind: KindOOM, Scope: f.scope, Message: f.message, Reported: reported, Capacity: capa, Lines: []string{strings.TrimSpace(line)}}, nil
	}
	return nil, nil
}

// parseScratch reads an out-of-memory message of a TensorCore's scratch
// memory (MessageScratch) starting on lines[i], with its sizes where that
// line or the next two print them; nil where lines[i] has none.
func parseScratch(lines []string, i int) (*CompileLog, error) {
	m := reScratch.FindStringSubmatch(lines[i])
	if m == nil {
		return nil, nil
	}
	l := CompileLog{Kind: KindOOM, Message: MessageScratch, Space: m[1], Lines: []string{strings.TrimSpace(lines[i])}}
	for j, next := range lines[i:min(i+3, len(lines))] {
		s := reScratchUsed.FindStringSubmatch(next)
		if s == nil {
			s = reScratchScoped.FindStringSubmatch(next)
		}
		if s == nil {
			continue
		}
		used, err1 := logBytes(s[1])
		limit, err2 := logBytes(s[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		l.Reported, l.Capacity = used, limit
		if j > 0 {
			l.Lines = append(l.Lines, strings.TrimSpace(next))
		}
		break
	}
	return &l, nil
}

// Failure says what failed, for a log of a job that did not run
// (Compiled false): the compile, XLA's rematerialization out of room, or
// the runtime's load of a program that compiled; the bytes a JAX device.
func (l CompileLog) Failure() string {
	switch l.Message {
	case MessageScratch:
		sizes := ""
		if l.Capacity > 0 {
			sizes = fmt.Sprintf(" (%s of %s)", mib(l.Reported), mib(l.Capacity))
		}
		return fmt.Sprintf("the compile failed: XLA ran out of %s%s, a TensorCore's on-chip scratch memory, which the plan's HBM model does not cover: a kernel's block sizes or its VMEM limit must change (openxla/xla docs/errors/error_1001.md), and the log says nothing of the plan's HBM",
			strings.ToUpper(l.Space), sizes)
	case MessageEarlyAbort:
		return fmt.Sprintf("the compile failed: XLA aborted it early, estimating before it laid the step out that it needs %s with %s available a JAX device, more than rematerialization could save", gib(l.Reported), gib(l.Capacity))
	case MessageReserve:
		return fmt.Sprintf("the compile passed, then the program failed to load: the runtime could not reserve %s for its temporaries, with %s reservable a JAX device", gib(l.Reported), gib(l.Capacity))
	case MessageTemporaries:
		return fmt.Sprintf("the compile failed: XLA's temporaries need %s of the %s available a JAX device", gib(l.Reported), gib(l.Capacity))
	}
	return fmt.Sprintf("the compile failed: XLA ran out of memory at %s of %s a JAX device", gib(l.Reported), gib(l.Capacity))
}

// mib spells a scratch memory's bytes: MiB to two decimals, as XLA's M.
func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }
