package inference

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/internal/braces"
	"shardlab/unit"
)

// WriteText writes the plan as shardlab inference prints it: the request,
// the chosen layout with its reasons and warnings, memory, latency and
// throughput, every layout, and command, the serving command line.
// Options its reasons and warnings name are spelt as Phrase(nil) spells
// them, unless p was spelt already.
func (p Plan) WriteText(w io.Writer, command string) error {
	p = p.Phrase(nil)
	p.writeRequest(w)
	p.writeBest(w)
	if err := p.writeLayouts(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", command)
	return err
}

// Phrase is p with the options its reasons and warnings name as {key}
// (the JSON key of an Options field in braces: {checkpoint_dtype}) spelt
// by name, the CLI's flags or the web form's labels, and their own
// braces undoubled; nil spells the options as the package does
// (checkpoint_dtype). A plan Phrase returned is returned as it is.
func (p Plan) Phrase(name func(field string) string) Plan {
	if p.spelt {
		return p
	}
	if name == nil {
		name = func(f string) string { return f }
	}
	spell := func(notes []string) []string {
		out := make([]string, len(notes))
		for i, s := range notes {
			out[i] = braces.Spell(s, name, isOptionKey)
		}
		return out
	}
	p.Reasons, p.Warnings, p.spelt = spell(p.Reasons), spell(p.Warnings), true
	return p
}

// optionKeys are what Phrase spells in a plan's notes as {key}: the JSON
// key of each Options field; braces.Literal doubles the braces of text
// from outside (a path given as hf_model), which Phrase then undoubles.
var optionKeys = func() map[string]bool {
	t := reflect.TypeFor[Options]()
	keys := map[string]bool{}
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); k != "" && k != "-" {
			keys[k] = true
		}
	}
	return keys
}()

func isOptionKey(k string) bool { return optionKeys[k] }

// writeRequest writes what was asked: the model, the TPU, the load, the
// dtypes, the objective and the SLOs, and whether the plan is a best
// effort.
func (p Plan) writeRequest(w io.Writer) {
	r, b := p.Request, p.Best
	load := b.Load()
	if r.RequestRate > 0 {
		load = fmt.Sprintf("%g requests/s (%d sequences in the server on average on this layout)", r.RequestRate, b.Concurrency)
	}
	each := "a replica"
	if b.AttentionDP > 1 {
		each = fmt.Sprintf("on each of a replica's %d schedulers", b.AttentionDP) // one a rank [ti-dps]
	}
	if r.MaxNumSeqs > 0 {
		load = fmt.Sprintf("max_num_seqs %d %s (%s)", r.MaxNumSeqs, each, b.Load())
	}
	kv := string(r.KVCache)
	if r.KVCacheDtype != "" && r.KVCacheDtype != kv {
		kv = fmt.Sprintf("%s (%s)", r.KVCacheDtype, r.KVCache)
	}
	fmt.Fprintf(w, "serving %s on %s (%s, %s a chip): max model len %d, %s of %s, weights %s, KV cache %s\n",
		r.Model.Name, r.Slice.AcceleratorType(), unit.Plural(r.Slice.Chips(), "chip"), unit.Plural(r.Slice.Chip.JAXDevicesPerChip, "JAX device"), r.MaxModelLen, load, r.lengths(), r.Weights, kv)
	goal := "objective " + string(r.Objective)
	if s := r.slos(); s != "" {
		goal += ", SLOs " + s
	}
	fmt.Fprintf(w, "%s\n", goal)
	if p.BestEffort {
		fmt.Fprintf(w, "NO LAYOUT MEETS THE SLOs: the best effort is shown\n")
	}
}

// writeBest writes the chosen layout with its reasons and warnings, its
// HBM, its latency and its throughput.
func (p Plan) writeBest(w io.Writer) {
	r, b := p.Request, p.Best
	m := b.Memory
	ep := ""
	if b.EP > 1 {
		ep = fmt.Sprintf(" (expert parallel %d)", b.EP)
	}
	seqs := unit.Plural(b.SeqsEach, "sequence") + " per replica"
	if b.RunningEach > 0 {
		seqs = fmt.Sprintf("%s per replica running at once, of %s", unit.Plural(b.RunningEach, "sequence"), b.Admits())
	}
	fmt.Fprintf(w, "\nlayout: tensor parallel %d%s × data parallel %d on %s, %s\n", b.TP, ep, b.DP, unit.Plural(b.Chips, "chip"), seqs)
	for _, s := range p.Reasons {
		fmt.Fprintf(w, "  - %s\n", s)
	}
	for _, s := range p.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
	states := ""
	if m.Recurrent > 0 {
		states = fmt.Sprintf(", linear-attention states %v", m.Recurrent)
	}
	fmt.Fprintf(w, "\nHBM per device: %v × %g = %v: weights %v, activations %v%s, KV cache %v\n",
		m.Capacity, r.MemoryUtilization, m.Budget, m.Weights, m.Activations, states, m.KVCache)
	fmt.Fprintf(w, "  KV %v a token, pages of %d tokens: %d pages, %s of %d tokens per replica (%d in all), %d of %s at once\n",
		m.KVPerToken, m.BlockSize, m.Pages, unit.Plural(m.MaxSeqs, "sequence"), r.MaxModelLen, m.MaxSeqs*b.DP, m.HeldSeqs, strings.TrimSuffix(r.heldLengths(), " tokens"))
	fmt.Fprintf(w, "latency (rooflines, all-reduces not overlapped): TTFT %v (%s); inter-token %v\n", secs(b.TTFT), prefillParts(r, b), secs(b.ITL))
	fmt.Fprintf(w, "  = max(weights HBM %v, MXU %v) + max(KV HBM %v, attention MXU passes %v)%s + sampling %v + all-reduce %v + step overhead %v\n",
		secs(b.DecodeMemory-b.DecodeKV), secs(b.DecodeCompute), secs(b.DecodeKV), secs(b.DecodeAttention), decodeExtras(b), secs(b.DecodeSampling), secs(b.DecodeAllReduce), secs(b.DecodeOverhead))
	if q := b.Queue(); q != "" {
		fmt.Fprintf(w, "  %s\n", q)
	}
	if r.RequestRate > 0 && b.Fits {
		f := b.LoadTTFT
		fmt.Fprintf(w, "  TTFT at %g requests/s (steady state, behind the step in progress and the prompts that arrived with it): mean %v, p90 %v, p99 %v; the TTFT SLO takes the mean\n",
			r.RequestRate, secs(f.Mean), secs(f.P90), secs(f.P99))
	}
	fmt.Fprintf(w, "throughput: %.0f output tokens/s, %.0f per chip\n%s\n", b.TokensPerSecond, b.PerChip, p.rooflineBand())
}

// prefillParts names the terms of b's TTFT, which add up to it: the
// prefill roofline (each chunk the longer of its MXU time and its
// weights' HBM read), the all-reduces and the step overheads.
func prefillParts(r Request, b Layout) string {
	roof := fmt.Sprintf("max(MXU %v, weights HBM %v)", secs(b.PrefillCompute), secs(b.PrefillWeights))
	if b.PrefillSteps > 1 {
		return fmt.Sprintf("prefill in %d steps of at most %d tokens: %v, each step the longer of its MXU time and its weights' HBM read (MXU %v, weights HBM %v in all), all-reduce %v, step overhead %d × %v",
			b.PrefillSteps, r.MaxNumBatchedTokens, secs(b.PrefillRoofline), secs(b.PrefillCompute), secs(b.PrefillWeights), secs(b.PrefillAllReduce), b.PrefillSteps, secs(b.DecodeOverhead))
	}
	return fmt.Sprintf("prefill %v = %s, all-reduce %v, step overhead %v", secs(b.PrefillRoofline), roof, secs(b.PrefillAllReduce), secs(b.DecodeOverhead))
}

// decodeExtras names the terms of b's ITL that only some models have:
// a hybrid model's linear-attention recurrences and a mixture of
// experts' dispatch of the routed rows.
func decodeExtras(b Layout) string {
	s := ""
	if b.DecodeLinear > 0 {
		s += fmt.Sprintf(" + linear-attention recurrent states %v", secs(b.DecodeLinear))
	}
	if b.DecodeDispatch > 0 {
		s += fmt.Sprintf(" + MoE dispatch of the routed rows %v", secs(b.DecodeDispatch))
	}
	return s
}

// writeLayouts writes every layout considered, one row each: whether
// vLLM starts it (fits), the sequences its pages hold at the requests'
// lengths across its replicas, and whether it preempts.
func (p Plan) writeLayouts(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	lat := "TTFT\tITL"
	if p.Request.RequestRate > 0 {
		// Request.Seen: the means at the offered load
		lat = "TTFT at load\tITL at load"
	}
	fmt.Fprintln(tw, "TP\tEP\tDP\tchips\tfits\theld seqs\t"+lat+"\ttok/s/chip\t")
	for _, l := range p.Layouts {
		var notes []string
		if l.Preempts {
			notes = append(notes, "preempts")
		}
		if len(l.Misses) > 0 {
			notes = append(notes, "misses "+strings.Join(l.Misses, ", "))
		}
		slo := ""
		if len(notes) > 0 {
			slo = "  " + strings.Join(notes, "; ")
		}
		t, i := p.Request.Seen(l)
		ttft, itl, tps := secs(t).String(), secs(i).String(), fmt.Sprintf("%.0f", l.PerChip)
		if !l.Fits {
			// the load does not fit its pages: it cannot run at it
			ttft, itl, tps = "n/a", "n/a", "n/a"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%v\t%d\t%s\t%s\t%s\t%s\n", l.TP, l.EP, l.DP, l.Chips, l.Fits, l.DP*l.Memory.HeldSeqs, ttft, itl, tps, slo)
	}
	return tw.Flush()
}

// secs is d as a report prints a duration: three significant digits in
// s, ms, µs or ns (unit.Seconds).
func secs(d time.Duration) unit.Seconds { return unit.Seconds(d.Seconds()) }

// WriteSim writes sim, the simulation of q's plan at concurrency
// closed-loop clients (or at q's request rate), as shardlab inference and
// the web page print it: its measurements and their held-out band.
func (q Question) WriteSim(w io.Writer, sim SimResult, concurrency int) error {
	what := fmt.Sprintf("%s lengths, %s", q.Mix, unit.Plural(concurrency, "concurrent client"))
	if rate := q.Request.RequestRate; rate > 0 {
		what = fmt.Sprintf("%s lengths, Poisson arrivals at %g requests/s, seed %d", q.Mix, rate, q.Seed)
	}
	if err := sim.WriteText(w, what); err != nil {
		return err
	}
	return sim.WriteBand(w, q.Mix)
}

// WriteText writes the simulation's measurements: the load it served,
// throughput, and TTFT and ITL percentiles; WriteBand writes their band.
func (s SimResult) WriteText(w io.Writer, load string) error {
	idle := ""
	if s.Idle > 0 {
		idle = fmt.Sprintf(" (%d with no client)", s.Idle)
	}
	_, err := fmt.Fprintf(w, "simulated (%s scheduler, %s): one replica of %d%s served %s, %d output tokens in %v over %d steps, %d preemptions\n"+
		"  throughput %.0f output tokens/s (all replicas)\n"+
		"  TTFT mean %v, p50 %v, p90 %v, p99 %v\n"+
		"  ITL  mean %v, p50 %v, p90 %v, p99 %v\n",
		s.Engine, load, s.Replicas, idle, unit.Plural(s.Requests, "request"), s.OutputTokens, secs(s.Duration), s.Steps, s.Preemptions, s.TokensPerSecond,
		secs(s.TTFT.Mean), secs(s.TTFT.P50), secs(s.TTFT.P90), secs(s.TTFT.P99),
		secs(s.ITL.Mean), secs(s.ITL.P50), secs(s.ITL.P90), secs(s.ITL.P99))
	return err
}
