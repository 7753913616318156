package inference

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"shardlab/hw"
	"shardlab/internal/braces"
	"shardlab/unit"
)

// NoFitError is a request no layout serves (it unwraps to ErrNoFit): why,
// and the changes of one field each with which it fits, checked by
// costing. Why names the request's fields as {field} (its JSON key in
// braces: {max_model_len}), which Phrase spells.
type NoFitError struct {
	Why  string
	Fits []Fit
}

// Fit is a field's value with which a request fits, and the layout it
// then gets.
type Fit struct {
	Field, Value string
	TP, DP       int
}

func (e *NoFitError) Error() string { return e.Phrase(nil) }

// Phrase is the error with the fields Why names as {field} and each
// field of Fits spelt by name (the CLI's flags), as Plan.Phrase spells a
// note; nil spells them as the package does (max_model_len).
func (e *NoFitError) Phrase(name func(field string) string) string {
	if name == nil {
		name = func(f string) string { return f }
	}
	s := "inference: " + ErrNoFit.Error() + ": " + braces.Spell(e.Why, name, isOptionKey)
	for i, f := range e.Fits {
		sep := "; it fits with "
		if i > 0 {
			sep = " or with "
		}
		s += sep + f.Phrase(name)
	}
	return s
}

// Phrase is the fit as a change to the request with the layout it gets,
// its field spelt by name (nil: as the package does): "request_rate 4.76
// (TP 4 × DP 1)".
func (f Fit) Phrase(name func(field string) string) string {
	if name == nil {
		name = func(f string) string { return f }
	}
	return fmt.Sprintf("%s %s (TP %d × DP %d)", name(f.Field), f.Value, f.TP, f.DP)
}

// FixTexts are e's fits, each phrased (Fit.Phrase) with its field spelt
// by name: the fixes a front end's JSON error document lists, never nil.
func (e *NoFitError) FixTexts(name func(field string) string) []string {
	out := make([]string, len(e.Fits))
	for i, f := range e.Fits {
		out[i] = f.Phrase(name)
	}
	return out
}

func (e *NoFitError) Unwrap() error { return ErrNoFit }

// noFit says why no layout serves the request: when the weights (with
// the activation buffers) leave no HBM for pages on every layout, what
// they take and what a device may hold, and what would fit (weightsWhy);
// when no layout's pages hold one sequence of max_model_len tokens, what
// they need and what is left (pagesWhy), the one rule vLLM refuses a
// server by (fitsOne); else, under a request rate, that no layout vLLM
// starts keeps up with it.
func noFit(r Request, layouts []Layout) *NoFitError {
	if e := weightsWhy(r, layouts); e != nil {
		return e
	}
	if e := pagesWhy(r, layouts); e != nil {
		return e
	}
	why := fmt.Sprintf("no layout of %s serves %d concurrent sequences of %s", r.Slice.AcceleratorType(), r.Concurrency, braces.Literal(r.lengths()))
	if r.RequestRate > 0 {
		why = fmt.Sprintf("%g requests/s of %s saturate %s: at the mean step with the arriving prompts' chunks they keep more sequences at once than the pages hold at the requests' lengths or than the %d accepted, or the steps cannot keep up",
			r.RequestRate, braces.Literal(r.lengths()), r.Slice.AcceleratorType(), MaxConcurrency)
		if l, ok := unsettledAt(r, layouts); ok {
			why = fmt.Sprintf("%g requests/s of %s: no layout of %s keeps up with them, and on TP %d × DP %d the search for their steady state did not settle within %d units of work (step evaluations by their sequences) or %d iterations (it is not known to saturate it)",
				r.RequestRate, braces.Literal(r.lengths()), r.Slice.AcceleratorType(), l.TP, l.DP, maxWork, maxIterations)
			return &NoFitError{Why: why}
		}
		return &NoFitError{Why: why, Fits: rateFits(r)}
	}
	return &NoFitError{Why: why}
}

// rateFits are the changes of one field with which a request rate that
// saturates r's slice is served, each checked by costing it: the
// highest rate the slice keeps up with (maxRate), and the smallest
// larger slice of the generation, up to rateSlices times the chips,
// that keeps up with the rate (more replicas share the arrivals).
func rateFits(r Request) []Fit {
	var fits []Fit
	if rate, l, ok := maxRate(r); ok {
		fits = append(fits, Fit{Field: "request_rate", Value: strconv.FormatFloat(rate, 'g', -1, 64), TP: l.TP, DP: l.DP})
	}
	if r.TP > 0 || r.DP > 0 {
		return fits // a fixed layout: another slice would not change it
	}
	chips := r.Slice.Chips()
	for _, name := range r.Slice.Chip.AcceleratorTypes() {
		s, err := hw.ParseAcceleratorType(name)
		if err != nil || s.Chips() <= chips {
			continue
		}
		if s.Chips() > rateSlices*chips {
			break
		}
		q := r
		q.Slice = s
		if l, ok := fitting(q); ok {
			fits = append(fits, Fit{Field: "tpu", Value: s.AcceleratorType(), TP: l.TP, DP: l.DP})
			break
		}
	}
	return fits
}

// rateSlices bounds the larger slices rateFits tries: up to this many
// times the request's chips.
const rateSlices = 8

// maxRate is the highest request rate below r's, to three significant
// figures rounded down, that some layout of r's slice keeps up with, and
// that layout: a bisection on the rate (a slice that keeps up with a
// rate keeps up with any lower one: its steady state holds fewer
// sequences at shorter steps), to within 1 %, then the figure rounded
// down and costed again. The bisection stops once the rate is below
// MinRequestRate: where no rate keeps up, hi would halve towards zero
// for a thousand costings.
func maxRate(r Request) (float64, Layout, bool) {
	lo, hi := 0.0, r.RequestRate
	for hi-lo > 0.01*hi && hi >= MinRequestRate {
		mid := (lo + hi) / 2
		q := r
		q.RequestRate = mid
		if _, ok := fitting(q); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo <= 0 {
		return 0, Layout{}, false
	}
	p := math.Pow(10, math.Floor(math.Log10(lo))-2)
	q := r
	q.RequestRate = math.Floor(lo/p) * p
	if q.RequestRate < MinRequestRate {
		return 0, Layout{}, false
	}
	l, ok := fitting(q)
	return q.RequestRate, l, ok
}

// pagesWhy is noFit's reason when some layout has HBM left for pages but
// none for one sequence's pages of max_model_len tokens: what they need
// and what is left a device, on the layout with the most room for them,
// and the longest max_model_len that fits (shorterFit); nil when some
// layout holds a sequence.
func pagesWhy(r Request, layouts []Layout) *NoFitError {
	var best Layout
	var need, left unit.Bytes
	for _, l := range layouts {
		m := l.Memory
		if l.Fits || m.MaxSeqs > 0 {
			return nil // one sequence fits (fitsOne): the layout failed on its load
		}
		n := unit.Bytes(ceilDiv(r.MaxModelLen, m.BlockSize)*m.BlockSize) * m.KVPerToken
		if best.TP == 0 || float64(m.KVCache)/float64(n) > float64(left)/float64(need) {
			best, need, left = l, n, m.KVCache
		}
	}
	if best.TP == 0 {
		return nil
	}
	e := &NoFitError{Why: fmt.Sprintf("one sequence's KV pages of {max_model_len} %d tokens do not fit on %s: they need %v a device, and %v is left for the KV cache at TP %d × DP %d (%v of weights)",
		r.MaxModelLen, r.Slice.AcceleratorType(), need, left, best.TP, best.DP, best.Memory.Weights)}
	if n, l, ok := shorterFit(r); ok {
		e.Fits = append(e.Fits, Fit{Field: "max_model_len", Value: strconv.Itoa(n), TP: l.TP, DP: l.DP})
	}
	return e
}

// shorterFit is the longest max_model_len below r's, at least r's prompt
// and output, with which r fits, and its best layout, found by bisection
// (a shorter length needs fewer pages) and checked by costing.
func shorterFit(r Request) (int, Layout, bool) {
	try := func(n int) (Layout, bool) {
		q := r
		q.MaxModelLen = n
		if _, err := NewRequest(q); err != nil {
			return Layout{}, false
		}
		return fitting(q)
	}
	lo, hi := r.heldTokens(), r.MaxModelLen // lo fits, hi does not
	best, ok := try(lo)
	if !ok || lo >= hi {
		return 0, Layout{}, false
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if l, ok := try(mid); ok {
			lo, best = mid, l
		} else {
			hi = mid
		}
	}
	return lo, best, true
}

// weightsWhy is noFit's reason when no layout has HBM left for a single
// page: the weights a device holds on the layout that splits them most,
// against the budget of a device, and as Fits the weight formats and the
// smallest larger slice of the same generation that would serve the
// request (each checked by costing it); nil when some layout has room
// for pages.
func weightsWhy(r Request, layouts []Layout) *NoFitError {
	if len(layouts) == 0 {
		return nil
	}
	least := layouts[0]
	for _, l := range layouts {
		if l.Memory.KVCache > 0 {
			return nil
		}
		if l.Memory.Weights < least.Memory.Weights {
			least = l
		}
	}
	m := least.Memory
	split := fmt.Sprintf("the widest split on %s", r.Slice.AcceleratorType())
	if r.TP != 0 {
		split = fmt.Sprintf("the {tensor_parallel_size} given (the widest on %s is %d)", r.Slice.AcceleratorType(), last(tpSizes(r.Model, r.Slice, r.AttentionDP())))
	}
	what := fmt.Sprintf("{weights} %s: %s's weights (%v in all) take %v a device at TP %d, %s", r.Weights, braces.Literal(r.Model.Name),
		WeightBytes(r.Model, 1, r.Weights), m.Weights, least.TP, split)
	if m.Weights < m.Budget {
		what += fmt.Sprintf(", and with the activation buffers (%v) leave no room for the KV cache in", m.Activations)
	} else {
		what += ", more than"
	}
	e := &NoFitError{Why: what + fmt.Sprintf(" the %v a device may hold (%v × {gpu_memory_utilization} %g)", m.Budget, m.Capacity, r.MemoryUtilization)}
	if f, ok := widerTP(r); ok {
		e.Fits = append(e.Fits, f)
	}
	for _, w := range []Dtype{FP8, Int8} {
		q := r
		q.Weights = w
		if w.Bytes() >= r.Weights.Bytes() {
			continue // no smaller than the request's
		}
		if l, ok := fitting(q); ok {
			e.Fits = append(e.Fits, Fit{Field: "weights", Value: string(w), TP: l.TP, DP: l.DP})
		}
	}
	wider := fmt.Sprintf("a larger %s slice", r.Slice.Chip.Generation)
	if r.TP != 0 {
		// a fixed tensor-parallel size holds as many weights a device
		// on any slice: the fix is a wider one (widerTP)
		wider = "a wider {tensor_parallel_size}"
	} else if s, l, ok := largerSlice(r); ok {
		e.Fits = append(e.Fits, Fit{Field: "tpu", Value: s.AcceleratorType(), TP: l.TP, DP: l.DP})
	}
	if len(e.Fits) == 0 {
		nor := fmt.Sprintf("no %s would fit it", strings.TrimPrefix(wider, "a "))
		if r.Weights == BF16 {
			nor = fmt.Sprintf("neither fp8 nor int8 weights nor %s would fit it", wider)
		}
		e.Why += "; " + nor
	}
	return e
}

// widerTP is, for a request that fixes its tensor-parallel size, the
// least wider one with which it fits (its replicas as the request fixes
// them, or filling the slice), checked by costing it.
func widerTP(r Request) (Fit, bool) {
	if r.TP == 0 {
		return Fit{}, false
	}
	for _, t := range tpSizes(r.Model, r.Slice, r.AttentionDP()) {
		if t <= r.TP {
			continue
		}
		q := r
		q.TP = t
		if l, ok := fitting(q); ok {
			return Fit{Field: "tensor_parallel_size", Value: strconv.Itoa(t), TP: l.TP, DP: l.DP}, true
		}
	}
	return Fit{}, false
}

// fitting is the best layout for r when one fits.
func fitting(r Request) (Layout, bool) {
	l := costed(r)
	if len(l) == 0 || !l[0].Fits {
		return Layout{}, false
	}
	return l[0], true
}

// largerSlice is the smallest slice of r's generation, larger than r's,
// on which r fits, and its best layout. The slices are tried while they
// widen the tensor parallelism: beyond that a larger slice only adds
// replicas, each holding as many weights as before.
func largerSlice(r Request) (hw.Slice, Layout, bool) {
	c, chips := r.Slice.Chip, r.Slice.Chips()
	widest := last(tpSizes(r.Model, r.Slice, r.AttentionDP()))
	for _, name := range c.AcceleratorTypes() {
		s, err := hw.ParseAcceleratorType(name)
		if err != nil || s.Chips() <= chips {
			continue
		}
		w := last(tpSizes(r.Model, s, r.AttentionDP()))
		if w <= widest {
			break
		}
		widest = w
		q := r
		q.Slice, q.TP, q.DP = s, 0, 0
		if l, ok := fitting(q); ok {
			return s, l, true
		}
	}
	return hw.Slice{}, Layout{}, false
}

// costed costs every candidate layout of r, best first.
func costed(r Request) []Layout {
	var out []Layout
	for _, td := range Candidates(r) {
		l := Estimate(r, td[0], td[1])
		if r.RequestRate > 0 {
			l = AtRate(r, td[0], td[1])
			l.Misses = r.misses(l)
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return r.better(out[i], out[j]) })
	return out
}
