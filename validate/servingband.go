package validate

import (
	"fmt"
	"strings"

	"shardlab/inference"
	"shardlab/unit"
)

// ServingBands measures the serving model's error on the report's
// held-out vLLM rows (calibration: false; modelled and not refused, as
// the summaries count them), the engine shardlab inference plans for,
// by length class (inference.ClassOf of the mean lengths the row's
// simulation draws, ServingRow.SimOptions): each row's error, rounded to
// 0.0001, of the simulation's output tokens/s, of the roofline's
// (inference.Layout.TokensPerSecond at the row's concurrency) and, where
// the row publishes them, of the simulation's mean TTFT and ITL. Classes
// are listed in inference's order, rows in the table's; a class without
// a row is left out. inference.ServingBands holds the result for the
// built-in table (TestServingBands).
func ServingBands(rep ServingReport) []inference.ServingBand {
	rows := map[inference.LengthClass][]inference.BandRow{}
	for _, r := range rep.Results {
		if !r.Modelled || r.Refused() || r.Row.Calibration || r.Row.ServingEngine() != inference.VLLM {
			continue
		}
		prompt, output := r.Row.SimOptions().Load.Mix.Means()
		b := inference.BandRow{ID: r.Row.ID, Prompt: prompt, Output: output,
			Throughput: round4(r.Error), Roofline: round4(r.RooflineError)}
		if p := r.Row.Published; p.MeanTTFTms > 0 && p.MeanITLms > 0 {
			b.Latency, b.TTFT, b.ITL = true, round4(r.TTFTError), round4(r.ITLError)
		}
		c := inference.ClassOf(prompt, output)
		rows[c] = append(rows[c], b)
	}
	var out []inference.ServingBand
	for _, c := range []inference.LengthClass{inference.ClassOther, inference.ClassPromptHeavy} {
		if len(rows[c]) > 0 {
			out = append(out, inference.ServingBand{Class: c, Rows: rows[c]})
		}
	}
	return out
}

// writeBands writes the held-out bands the serving plans print
// (ServingBands): each length class's rows and the spread of each error.
func writeBands(b *strings.Builder, bands []inference.ServingBand) {
	fmt.Fprintln(b, "\nHeld-out bands of the serving plans (the vLLM rows above not fitted on, by the requests' mean lengths; inference.ServingBands):")
	for _, band := range bands {
		lat := "no row publishes TTFT or ITL"
		if f, i := band.TTFT(), band.ITL(); f.Rows > 0 && i.Rows > 0 {
			lat = fmt.Sprintf("TTFT %v, ITL %v, on the %s publishing them", f, i, unit.Plural(f.Rows, "row"))
		}
		fmt.Fprintf(b, "  requests %s: %d rows (%s): simulation %v, roofline %v; %s\n",
			band.Class.Describe(), len(band.Rows), strings.Join(band.IDs(), ", "), band.Throughput(), band.Roofline(), lat)
	}
}
