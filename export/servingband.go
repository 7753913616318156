package export

import "shardlab/inference"

// BandJSON is a serving figure's held-out band (inference.ServingBand):
// the held-out vLLM rows of validate's serving table of the requests'
// length class, and each figure at the ends of the model's error on
// them. A figure no row measures is absent.
type BandJSON struct {
	Class               string      `json:"length_class"`
	PromptHeavyRatio    int         `json:"prompt_heavy_ratio"`
	Rows                []string    `json:"rows"`
	TokensPerSecond     *SpreadJSON `json:"output_tokens_per_s,omitempty"`
	TokensPerSecondChip *SpreadJSON `json:"output_tokens_per_s_per_chip,omitempty"`
	TTFT                *SpreadJSON `json:"ttft_mean_s,omitempty"`
	ITL                 *SpreadJSON `json:"itl_mean_s,omitempty"`
}

// SpreadJSON is one figure's band: the least and most error,
// (predicted − published) / published, of the rows that measure it, and
// the figure at its ends, predicted / (1 + error): Low at HighError,
// High at LowError.
type SpreadJSON struct {
	Rows      int     `json:"rows"`
	LowError  float64 `json:"low_error"`
	HighError float64 `json:"high_error"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
}

// spread is x at the ends of s; nil where no row measures it.
func spread(s inference.ErrorSpread, x float64) *SpreadJSON {
	if s.Rows == 0 {
		return nil
	}
	lo, hi := s.Around(x)
	return &SpreadJSON{Rows: s.Rows, LowError: s.Low, HighError: s.High, Low: lo, High: hi}
}

func bandJSON(b inference.ServingBand) *BandJSON {
	return &BandJSON{Class: string(b.Class), PromptHeavyRatio: inference.PromptHeavy, Rows: b.IDs()}
}

// rooflineBand is the band of p's chosen layout's roofline throughput;
// nil where no row measures it or the layout does not fit.
func rooflineBand(p inference.Plan) *BandJSON {
	b, ok := inference.BandOf(p.Request.Lengths())
	if !ok || !p.Best.Fits {
		return nil
	}
	out := bandJSON(b)
	out.TokensPerSecond, out.TokensPerSecondChip = spread(b.Roofline(), p.Best.TokensPerSecond), spread(b.Roofline(), p.Best.PerChip)
	return out
}

// simBand is the band of s, vLLM's simulation of requests of lengths m;
// nil for another engine's or where no row measures it.
func simBand(s inference.SimResult, m inference.LengthMix) *BandJSON {
	b, ok := inference.BandOf(m)
	if !ok || s.Engine != inference.VLLM {
		return nil
	}
	out := bandJSON(b)
	out.TokensPerSecond = spread(b.Throughput(), s.TokensPerSecond)
	if f, i := b.TTFT(), b.ITL(); f.Rows > 0 && i.Rows > 0 {
		out.TTFT, out.ITL = spread(f, s.TTFT.Mean.Seconds()), spread(i, s.ITL.Mean.Seconds())
	}
	return out
}
