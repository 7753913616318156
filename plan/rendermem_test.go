package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"shardlab/unit"
)

// TestXLAReportOfAnotherStage: Llama 3 8B on 2 slices of v5p-8 as
// data=4,pipeline=2(dcn), interleaved (1F1B's loss on the last stage),
// 10 % headroom: the first stage needs the most (the embedding and more
// micro-batches in flight), the last lays out the most (the loss's
// exponentials). The text names the last stage, what it needs and keeps,
// and the JSON carries that stage, from which the report is worked out
// again: total − transient + its largest phase with its recomputable
// buffers (v5p: one JAX device a chip).
func TestXLAReportOfAnotherStage(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.TPU, o.Slices, o.Mesh, o.Schedule, o.HBMHeadroom = "llama3-8b", "v5p-8", 2, "data=4,pipeline=2(dcn)", "interleaved", 0.1
	r, err := ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Best.Estimate.Memory
	if m.LaidOut == nil || m.LaidOut.Stage != "last" || !(m.Nominal() > m.Total()) {
		t.Fatalf("want the last stage to lay out more than the most loaded stage needs: LaidOut %v, Nominal %v, Total %v", m.LaidOut, m.Nominal(), m.Total())
	}
	var text strings.Builder
	if err := p.WriteText(&text, nil); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.Contains(l, "XLA's memory report") {
			line = l
		}
	}
	for _, want := range []string{"the last stage, which needs " + m.LaidOut.Total().String(), "the loss's fp32 exponentials (exp_shifted), ",
		"above this stage's " + m.Total().String() + " by " + (m.Nominal() - m.Total()).String()} {
		if !strings.Contains(line, want) {
			t.Errorf("report line %q, want it to say %q", line, want)
		}
	}
	if strings.Contains(line, "keeps ,") || strings.Contains(line, " 0 B") {
		t.Errorf("report line %q names nothing kept", line)
	}
	var js strings.Builder
	if err := p.WriteJSON(&js, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		M MemoryJSON `json:"hbm_used_per_chip"`
	}
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil || doc.M.LaidOut == nil {
		t.Fatalf("JSON %v, laid_out_stage %v", err, doc.M.LaidOut)
	}
	l := doc.M.LaidOut
	peak := l.Transient
	for _, ph := range l.Phases {
		b := int64(ph.Bytes())
		for _, r := range ph.Recomputable {
			b += int64(r.Bytes)
		}
		peak = max(peak, b)
	}
	if got := l.Total - l.Transient + peak; got != doc.M.XLAReport || got <= doc.M.Total {
		t.Errorf("laid_out_stage gives a report of %v, xla_report %v, total %v: want the report, above the total",
			unit.Bytes(got), unit.Bytes(doc.M.XLAReport), unit.Bytes(doc.M.Total))
	}
}
