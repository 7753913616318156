package budget

import (
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/plan"
)

// benchRequest is the default sweep of `shardlab budget --model
// llama3-70b --tokens 1T`: v5e, v5p, v6e and TPU7x, 256-chip slices, 1, 2
// or 4 of them, every mode, with a test price for every generation and
// mode so that every configuration is planned and priced.
func benchRequest(b *testing.B) Request {
	b.Helper()
	o := plan.DefaultOptions()
	o.Model, o.Top = "llama3-70b", 1
	pr, err := plan.ParseRequest(o)
	if err != nil {
		b.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString(header)
	gens := []hw.Generation{hw.V5e, hw.V5p, hw.V6e, hw.TPU7x}
	for _, g := range gens {
		for _, m := range modes {
			csv.WriteString(string(g) + "," + string(m) + ",*,1,bench,2026-12-05,\n")
		}
	}
	ps, err := ParsePrices(strings.NewReader(csv.String()))
	if err != nil {
		b.Fatal(err)
	}
	return Request{Plan: pr, Tokens: 1e12, Region: "us-central1", Generations: gens, Modes: modes, Prices: ps}
}

// BenchmarkSweep reports the sweep's configurations (generation × slice
// × count) and rows (× mode) per second: "serial" plans one configuration
// after the other, each search on every CPU (Sweep before planAll);
// "side-by-side" plans them on one CPU each, as Sweep does.
func BenchmarkSweep(b *testing.B) {
	for _, c := range []struct {
		name   string
		serial bool
	}{{"serial", true}, {"side-by-side", false}} {
		b.Run(c.name, func(b *testing.B) {
			r := benchRequest(b)
			r.serial = c.serial
			var res Result
			for b.Loop() {
				var err error
				if res, err = Sweep(r); err != nil {
					b.Fatal(err)
				}
			}
			configs := len(r.Generations) * len(DefaultSliceChips) * len(DefaultSliceCounts)
			b.ReportMetric(float64(configs*b.N)/b.Elapsed().Seconds(), "configs/s")
			b.ReportMetric(float64(len(res.Rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// TestSweepSideBySideIsSerial: planning the configurations side by side
// gives the same answer, byte for byte, as planning them one by one.
func TestSweepSideBySideIsSerial(t *testing.T) {
	r := smallRequest(t)
	var outs [2]string
	for i, serial := range []bool{true, false} {
		r.serial = serial
		res, err := Sweep(r)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := res.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		outs[i] = b.String()
	}
	if outs[0] != outs[1] {
		t.Errorf("side by side:\n%s\nserial:\n%s", outs[1], outs[0])
	}
}
