package plan

import (
	"fmt"
	"strings"
	"testing"

	"shardlab/cost"
)

// TestWeighOffload: Llama 3.1 405B on two v6e-256 slices, the published
// recipe's job (which offloads), runs 17 % faster with minimal_offloaded
// than with the search's own policies, more than the band; the plan says
// so, with the numbers a search asked for that policy gives. A plan whose
// policy was asked for, and one the offload does not speed up, say
// nothing of it.
func TestWeighOffload(t *testing.T) {
	r := request(t, "llama3-405b", "v6e-256", 2, 512)
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	before := len(p.Reasons)
	p.WeighOffload()
	q := r
	q.Remat = cost.RematMinimalOffloaded
	off, err := Search(q)
	if err != nil {
		t.Fatal(err)
	}
	a, b := off.Best.Estimate, p.Best.Estimate
	gain := a.TokensPerSecondPerChip/b.TokensPerSecondPerChip - 1
	if gain <= p.Band.Width() {
		t.Fatalf("the case does not hold: minimal_offloaded %.0f against %.0f tokens/s per chip, %.1f%% within the band's %.1f%%", a.TokensPerSecondPerChip, b.TokensPerSecondPerChip, 100*gain, 100*p.Band.Width())
	}
	want := fmt.Sprintf("minimal_offloaded the best layout, %s, is predicted %.0f%% faster (%.0f against %.0f tokens/s per chip)", a.Mesh, 100*gain, a.TokensPerSecondPerChip, b.TokensPerSecondPerChip)
	if len(p.Reasons) != before+1 || !strings.Contains(reasons(p), want) {
		t.Errorf("reasons:\n%s\nwant one more, with %q", reasons(p), want)
	}
	for _, c := range []struct {
		name string
		r    Request
	}{
		{"a policy asked for", q},
		{"llama3-8b on tpu7x-8", request(t, "llama3-8b", "tpu7x-8", 1, 512)},
	} {
		p, err := Search(c.r)
		if err != nil {
			t.Fatal(err)
		}
		n := len(p.Reasons)
		if p.WeighOffload(); len(p.Reasons) != n {
			t.Errorf("%s: a note on offloading: %s", c.name, reasons(p))
		}
	}
}
