package validate

import (
	"fmt"
	"math"

	"shardlab/cost"
	"shardlab/unit"
)

// MemoryResult is one memory case costed. Bytes are per JAX device, the
// unit the compiler reports in: cost's per-chip figures divided by the
// chip's devices (two on TPU7x, one elsewhere).
type MemoryResult struct {
	Case MemoryCase
	// Memory is cost's estimate, per chip.
	Memory         cost.Memory
	DevicesPerChip int
	// Total is the peak XLA's report is predicted to show
	// (cost.Memory.Compiled at Limit); Arguments what the step takes in
	// and gives back (the parameters and the optimizer state: XLA's
	// arguments, aliased to its outputs); Temp the rest (gradients, held
	// activations, the largest phase's transients).
	Total, Arguments, Temp int64
	// Needed is the peak the step needs (cost.Memory.Total), in the
	// case's scope as Predicted is (less the arguments where it is temp),
	// which Refused and Warned weigh; Squeezed, whether the report is
	// predicted after XLA recomputed what it could to fit (or ran out of
	// memory); AtLimit, whether it is predicted at the limit because XLA
	// recomputed to fit it (what it needs fits).
	Needed            int64
	Squeezed, AtLimit bool
	// Predicted is Total or Temp, as the case's scope says, and Error is
	// (Predicted − reported) / reported; NeededError is the same of
	// Needed, the error the plan's fit answer carries
	// (cost.MemoryErrorDense, MemoryErrorMoE).
	Predicted   int64
	Error       float64
	NeededError float64
	// Refused: for an out-of-memory case, whether the needed peak exceeds
	// Limit, the HBM XLA had: the case's capacity_bytes, or where the
	// source does not state it, cost's usable HBM per device (what plan
	// fits against).
	Refused bool
	Limit   int64
	// Warned: for an out-of-memory case not refused, whether a plan of it
	// would warn "HBM at the edge" (cost.ErrorBand.AtEdge of the model's
	// class, at Needed against Limit).
	Warned bool
	// ArgumentError and TempError compare Arguments and Temp with a
	// memory_analysis breakdown; NaN where the source does not give one.
	ArgumentError, TempError float64
	// Host is cost's offloaded bytes (Memory.Host) per device, and
	// HostError compares it with the breakdown's host temporaries (what
	// XLA places in pinned host memory); NaN where the source gives none.
	Host      int64
	HostError float64
}

// MemoryReport is cost's memory estimate against the memory table.
type MemoryReport struct {
	Results []MemoryResult
	// Batches, when set, holds the published runs' batches against the
	// most their layouts fit (EvaluateBatches).
	Batches *BatchReport
}

// EvaluateMemory costs every case on its configuration.
func EvaluateMemory(cases []MemoryCase) (MemoryReport, error) {
	var rep MemoryReport
	est := cost.NewEstimator()
	for _, c := range cases {
		j, m, err := c.Run(c.ID).Setup()
		if err != nil {
			return rep, fmt.Errorf("validate: memory case %s: %w", c.ID, err)
		}
		mem, err := est.Memory(j, m)
		if err != nil {
			return rep, fmt.Errorf("validate: memory case %s: %w", c.ID, err)
		}
		rep.Results = append(rep.Results, memoryResult(c, mem, m.Multislice.Slice.Chip.JAXDevicesPerChip))
	}
	return rep, nil
}

func memoryResult(c MemoryCase, mem cost.Memory, per int) MemoryResult {
	per = max(per, 1)
	perDevice := func(b int64) int64 { return int64(math.Round(float64(b) / float64(per))) }
	r := MemoryResult{Case: c, Memory: mem, DevicesPerChip: per,
		Needed: perDevice(int64(mem.Total())), Arguments: argumentsPerDevice(mem, per), Host: perDevice(int64(mem.Host)),
		ArgumentError: math.NaN(), TempError: math.NaN(), HostError: math.NaN()}
	r.Limit = c.CapacityBytes
	if r.Limit == 0 {
		r.Limit = perDevice(int64(mem.Usable))
	}
	limit := reportLimit(c, mem, r.Arguments, per)
	report, squeezed := mem.Compiled(limit)
	r.Total, r.Squeezed = perDevice(int64(report)), squeezed
	r.AtLimit = squeezed && mem.Total() <= limit
	r.Temp = r.Total - r.Arguments
	r.Predicted = r.Total
	if c.Scope == ScopeTemp {
		r.Predicted, r.Needed = r.Temp, r.Needed-r.Arguments
	}
	r.Error, r.NeededError = math.NaN(), math.NaN()
	if c.BytesStated() {
		r.Error, r.NeededError = relErr(r.Predicted, c.ReportedBytes), relErr(r.Needed, c.ReportedBytes)
	}
	r.Refused = c.Kind == KindOOM && r.Needed > r.Limit
	r.Warned = c.Kind == KindOOM && cost.MemoryErrorOf(c.Model).AtEdge(unit.Bytes(r.Needed), unit.Bytes(r.Limit))
	if h := c.Breakdown.HostTemp; h > 0 {
		r.HostError = relErr(r.Host, h)
	}
	if c.Kind == KindMemoryAnalysis {
		r.compareBreakdown(c.Breakdown)
	}
	return r
}

// argumentsPerDevice is mem's parameters and optimizer state a JAX device,
// on a chip of per devices: what XLA's arguments are (MemoryResult.Arguments).
func argumentsPerDevice(mem cost.Memory, per int) int64 {
	return int64(math.Round(float64(mem.Weights+mem.Optimizer) / float64(max(per, 1))))
}

// compareBreakdown sets the errors of cost's arguments and temporaries
// against the breakdown's, where it gives them.
func (r *MemoryResult) compareBreakdown(b Breakdown) {
	if b.Argument > 0 {
		r.ArgumentError = relErr(r.Arguments, b.Argument)
	}
	if b.Temp > 0 {
		r.TempError = relErr(r.Temp, b.Temp)
	}
}

// reportLimit is the HBM per chip XLA is taken to compile case c against:
// its stated capacity per device times per, plus the arguments where the
// capacity is on the temporaries alone (a temp-scope case), or where it
// states none the chip's XLA capacity (cost.Memory.XLACapacity: not the
// planning limit, which may hold a headroom).
func reportLimit(c MemoryCase, mem cost.Memory, arguments int64, per int) unit.Bytes {
	if c.CapacityBytes == 0 {
		return mem.XLACapacity
	}
	limit := c.CapacityBytes
	if c.Scope == ScopeTemp {
		limit += arguments
	}
	return unit.Bytes(limit * int64(per))
}

func relErr(got, want int64) float64 { return float64(got-want) / float64(want) }

// countOOM counts r among the out-of-memory cases, refused and warned:
// all of them, those that state no bytes, and those whose settings
// shardlab states.
func (st *MemoryStats) countOOM(r MemoryResult) {
	if r.Case.Kind != KindOOM {
		return
	}
	one := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	st.OOM++
	st.OOMRefused += one(r.Refused)
	st.OOMWarned += one(r.Warned)
	if !r.Case.BytesStated() {
		st.OOMUnstated++
		st.OOMUnstatedRefused += one(r.Refused)
	}
	if r.Case.Unmodelled == "" {
		st.StatedOOM++
		st.StatedOOMRefused += one(r.Refused)
		st.StatedOOMWarned += one(r.Warned)
	}
}

// MemoryStats summarises a set of cases: the |error| over the cases that
// did not run out of memory, and how many of those that did cost refuses.
type MemoryStats struct {
	Set        string  `json:"set"`
	N          int     `json:"cases"`
	Measured   int     `json:"measured_cases"`
	Median     float64 `json:"median_abs_error"`
	Max        float64 `json:"max_abs_error"`
	OOM        int     `json:"oom_cases"`
	OOMRefused int     `json:"oom_refused"`
	// OOMWarned is the out-of-memory cases not refused whose plan would
	// warn "HBM at the edge" (MemoryResult.Warned).
	OOMWarned int `json:"oom_warned_at_edge"`
	// OOMUnstated is the out-of-memory cases whose source states no
	// bytes: they count in OOM and OOMRefused, in no median.
	OOMUnstated        int `json:"oom_cases_bytes_not_stated,omitempty"`
	OOMUnstatedRefused int `json:"oom_cases_bytes_not_stated_refused,omitempty"`
	Unmodelled         int `json:"cases_with_unmodelled_settings"`
	WithinTenth        int `json:"measured_within_10_percent"`
	// AllMedian is the median |error| over every case that states its
	// bytes, out-of-memory ones included (their messages report the bytes
	// XLA needed too).
	AllMedian float64 `json:"all_median_abs_error"`
	// Stated is the cases whose every setting shardlab's configuration
	// states (no unmodelled settings), their median |error| over all of
	// them, and their out-of-memory cases and how many cost refuses.
	Stated       int     `json:"stated_cases"`
	StatedMedian float64 `json:"stated_median_abs_error"`
	// StatedBytes is how many of the Stated cases give bytes (the
	// median is over them).
	StatedBytes      int `json:"stated_cases_with_bytes"`
	StatedOOM        int `json:"stated_oom_cases"`
	StatedOOMRefused int `json:"stated_oom_refused"`
	StatedOOMWarned  int `json:"stated_oom_warned_at_edge"`
}

// Summary is the statistics of one set of cases (SetA, SetB).
func (rep MemoryReport) Summary(set string) MemoryStats {
	st := MemoryStats{Set: set}
	var errs, all, stated []float64
	for _, r := range rep.Results {
		if r.Case.Set != set {
			continue
		}
		st.N++
		st.countOOM(r)
		if r.Case.BytesStated() {
			all = append(all, math.Abs(r.Error))
		}
		if r.Case.Unmodelled != "" {
			st.Unmodelled++
		} else {
			st.Stated++
			if r.Case.BytesStated() {
				stated = append(stated, math.Abs(r.Error))
				st.StatedBytes++
			}
		}
		if r.Case.Kind == KindOOM {
			continue
		}
		e := math.Abs(r.Error)
		errs = append(errs, e)
		if e <= 0.10 {
			st.WithinTenth++
		}
		st.Max = max(st.Max, e)
	}
	st.Measured = len(errs)
	if len(errs) > 0 {
		st.Median = median(errs)
	}
	if len(all) > 0 {
		st.AllMedian = median(all)
	}
	if len(stated) > 0 {
		st.StatedMedian = median(stated)
	}
	return st
}

// anyUnstated says whether a case states no bytes.
func (rep MemoryReport) anyUnstated() bool {
	for _, r := range rep.Results {
		if !r.Case.BytesStated() {
			return true
		}
	}
	return false
}

// sets lists the report's sets, A first.
func (rep MemoryReport) sets() []string {
	return setsOf(rep.Results, func(r MemoryResult) string { return r.Case.Set })
}
