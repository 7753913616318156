package inference

import (
	"time"

	"shardlab/internal/accept"
)

// Accepts is the range each numeric option of Options accepts, as the
// front ends refuse a value that is no number of it (the CLI's flags, the
// web form's fields), worded by package accept; a note names other
// options as {key}. ParseOptions checks the values in range with its own
// rules (it owns what each means).
var Accepts = struct {
	MaxModelLen, Concurrency, PromptLen, OutputLen, MaxNumSeqs,
	MaxNumBatchedTokens, TP, DP, NumRequests accept.Whole[int]
	RequestRate, MemoryUtilization accept.Decimal
	TTFTSLO, ITLSLO                accept.Duration
	Seed                           accept.Whole[uint64]
}{
	MaxModelLen:         accept.Whole[int]{Lo: 0, Hi: MaxTokens, Note: "0: the catalog's sequence length for the model"},
	Concurrency:         accept.Whole[int]{Lo: 1, Hi: MaxConcurrency},
	PromptLen:           accept.Whole[int]{Lo: 1, Hi: MaxTokens},
	OutputLen:           accept.Whole[int]{Lo: 1, Hi: MaxTokens},
	MaxNumSeqs:          accept.Whole[int]{Lo: 1, Hi: MaxConcurrency, Note: "default: {concurrency}"},
	MaxNumBatchedTokens: accept.Whole[int]{Lo: 1, Hi: MaxTokens},
	TP:                  accept.Whole[int]{Lo: 0, Hi: 1024, Note: "0: search"},
	DP:                  accept.Whole[int]{Lo: 0, Hi: 1 << 16, Note: "0: fill the slice"},
	NumRequests:         accept.Whole[int]{Lo: 1, Hi: MaxSimRequests},
	RequestRate:         accept.Decimal{Lo: MinRequestRate, Hi: MaxRequestRate, Zero: "use {concurrency}", Unit: "requests/s"},
	MemoryUtilization:   accept.Decimal{Lo: 0, Hi: 1, LoOpen: true},
	TTFTSLO:             accept.Duration{Lo: 0, Hi: time.Hour, Note: "0: no target"},
	ITLSLO:              accept.Duration{Lo: 0, Hi: time.Hour, Note: "0: no target"},
	Seed:                accept.Whole[uint64]{Lo: 0, Hi: MaxSeed},
}

// Accepted is the range of the numeric option of JSON key key
// (Accepts); false for an option that is no number.
func Accepted(key string) (accept.Range, bool) {
	a := Accepts
	r, ok := map[string]accept.Range{
		"max_model_len": a.MaxModelLen, "concurrency": a.Concurrency, "prompt_len": a.PromptLen, "output_len": a.OutputLen,
		"max_num_seqs": a.MaxNumSeqs, "max_num_batched_tokens": a.MaxNumBatchedTokens, "tensor_parallel_size": a.TP,
		"data_parallel_size": a.DP, "num_requests": a.NumRequests, "request_rate": a.RequestRate,
		"gpu_memory_utilization": a.MemoryUtilization, "ttft_slo": a.TTFTSLO, "itl_slo": a.ITLSLO, "seed": a.Seed,
	}[key]
	return r, ok
}
