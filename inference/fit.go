package inference

import "fmt"

// The fit rule: which layouts vLLM runs, and which run their sequences
// without preemption. Sources, cited as [tag] below:
//
//	[v-kvcheck] vllm-project/vllm:vllm/v1/core/kv_cache_utils.py get_kv_cache_configs,
//	            _check_enough_kv_cache_memory @001cabc1: at start-up vLLM checks only that
//	            the KV cache holds one request of max_model_len tokens ("To serve at least
//	            one request with the models's max seq len ... KV cache is needed, which is
//	            larger than the available KV cache memory"); the concurrency it holds at that
//	            length is only logged (_report_kv_cache_config, "Maximum concurrency for ...
//	            tokens per request"). vllm/v1/engine/core.py EngineCore._initialize_kv_caches
//	            @00080ee1 runs it on the memory the worker reports (tpu-inference's
//	            TPUWorker.determine_available_memory, tpu_inference/worker/tpu_worker.py
//	            @b8692ff0), so it is the check tpu-inference's servers pass.
//	[v-alloc]   vllm-project/vllm:vllm/v1/core/sched/scheduler.py Scheduler.schedule
//	            @00024d31: pages are allocated as a request's tokens are scheduled
//	            (kv_cache_manager.allocate_slots for the step's new tokens), none reserved
//	            for its output; when they run out the last running request is preempted and
//	            recomputes later; max_num_seqs (max_num_running_reqs) only caps the running
//	            requests.

// fitsOne is vLLM's start-up check [v-kvcheck] on one scheduler's pages:
// they hold one sequence of max_model_len tokens, perSeq pages.
func fitsOne(pages, perSeq int) bool { return pages >= perSeq }

// holds reports whether one scheduler's pages of blockSize tokens hold
// seqs sequences of tokens tokens each at once: every running sequence
// at its full length, prompt and output, the pages that guarantee no
// preemption [v-alloc]. vLLM reserves no pages for a request's output
// when it admits it, so sequences admitted together (a closed loop of
// clients starts together, and fixed lengths keep them in step) reach
// their full length together, and only then is the pool at its
// fullest. The mean context, prompt + output/2, is what sequences out
// of step hold on average: pages sized to it run short whenever the
// sequences are in step, and about half the time when they are not, a
// break-even rather than a guarantee.
func holds(pages, blockSize, seqs, tokens int) bool {
	return seqs*ceilDiv(tokens, blockSize) <= pages
}

// heldTokens is the tokens each sequence is counted at by holds: the
// longest request of r's lengths (Request.Lengths), every request's
// prompt and output when they are fixed. Of a mix, every running
// sequence at the longest length it has is the guarantee; the
// simulation measures what the mix's lengths do.
func (r Request) heldTokens() int { return r.Lengths().Longest() }

// heldLengths names heldTokens: "1024+1024 tokens", or "up to 8000
// tokens (the length mix's longest request)".
func (r Request) heldLengths() string {
	if !r.Mix.zero() {
		return fmt.Sprintf("up to %d tokens (the length mix's longest request)", r.heldTokens())
	}
	return fmt.Sprintf("%d+%d tokens", r.PromptLen, r.OutputLen)
}

// lengths names the requests' lengths as the plan takes them: "1024+1024
// tokens", or a mix with its mean request and its longest.
func (r Request) lengths() string {
	if !r.Mix.zero() {
		return fmt.Sprintf("%s lengths (mean %d+%d tokens, up to %d)", r.Mix, r.PromptLen, r.OutputLen, r.heldTokens())
	}
	return fmt.Sprintf("%d+%d tokens", r.PromptLen, r.OutputLen)
}

// mixReason says which of a length mix's lengths the plan takes for
// what; "" for fixed lengths.
func (r Request) mixReason() string {
	if r.Mix.zero() {
		return ""
	}
	what := "the prefill, the decode context (%d tokens, each request weighted by its output) and the throughput"
	if r.RequestRate > 0 {
		what = "the prefill, the decode context (%d tokens, each request weighted by its output), Little's law and the offered throughput"
	}
	return fmt.Sprintf("lengths: the %s mix's mean request, %d+%d tokens, for "+what+"; its longest, %d tokens, for what the pages must hold without preemption",
		r.Mix, r.PromptLen, r.OutputLen, r.decodeContext(), r.heldTokens())
}
