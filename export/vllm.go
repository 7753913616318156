package export

import (
	"strconv"
	"strings"

	"shardlab/inference"
)

// VLLMServe is the `vllm serve` command line that runs a serving plan with
// the tpu-inference backend, one argument a string, behind `env` with
// tpu-inference's variables where the plan needs them (vllmEnv): the model (modelID,
// a Hugging Face repository or a local path), the tensor- and
// data-parallel sizes, the maximum model length, the scheduler's sequence
// and token budgets, the KV cache's dtype and page size, and the HBM
// share. The option names are vLLM's (testdata/vllm_serve_options.txt).
func VLLMServe(p inference.Plan, modelID string) []string {
	r, b := p.Request, p.Best
	kv := r.KVCacheDtype // as the user gave it, in vLLM's spelling
	if kv == "" {
		kv = "auto" // the model's dtype: bf16
		if r.KVCache == inference.FP8 {
			kv = "fp8"
		}
	}
	itoa := strconv.Itoa
	// Under attention data parallelism tpu-inference runs one vLLM
	// scheduler a rank, each taking --max-num-seqs as its own limit
	// ("Per-rank limits: max_seqs=...", DPScheduler in
	// tpu_inference/core/sched/dp_scheduler.py @b8692ff0): the layout's
	// max_num_seqs a scheduler, the request's as given when it set one.
	seqs := b.SchedulerSeqs()
	var args []string
	if env := vllmEnv(p); len(env) > 0 {
		args = append(append(args, "env"), env...) // set in the server's environment by env(1)
	}
	args = append(args, "vllm", "serve", modelID,
		"--tensor-parallel-size", itoa(b.TP),
		"--data-parallel-size", itoa(b.DP),
		"--max-model-len", itoa(r.MaxModelLen),
		"--max-num-seqs", itoa(seqs),
		"--max-num-batched-tokens", itoa(r.MaxNumBatchedTokens),
		"--kv-cache-dtype", kv,
	)
	if !inference.DPAttention(r.Model) {
		// an MLA plan leaves the page size to tpu-inference, which sets
		// its MLA page, 1024 tokens, only where --block-size is not given
		// (platforms/tpu_platform.py 367-373 @b8692ff0); vLLM would take
		// 1024 too (CacheConfig.block_size, any int above 0,
		// vllm/config/cache.py @002f10e0), but tpu-inference's own choice
		// is the page the plan costs
		args = append(args, "--block-size", itoa(b.Memory.BlockSize))
	}
	args = append(args, "--gpu-memory-utilization", strconv.FormatFloat(r.MemoryUtilization, 'g', -1, 64))
	if b.EP > 1 {
		args = append(args, "--enable-expert-parallel") // a BooleanOptionalAction: no value
	}
	if r.AttentionDP() {
		args = append(args, "--additional-config", `{"sharding":{"sharding_strategy":{"enable_dp_attention":true}}}`)
	}
	return args
}

// vllmEnv is the environment, NAME=VALUE each, that the vllm serve line
// of p sets for tpu-inference (vllm-project/tpu-inference @b8692ff0):
//   - NEW_MODEL_DESIGN=1 where the plan runs attention data parallel: it
//     runs it only then and refuses to start without it
//     (layers/common/sharding.py ShardingConfigManager.validate; for MLA,
//     platforms/tpu_platform.py check_and_update_config);
//   - TPU_MULTIHOST_BACKEND=ray where the plan's devices span hosts
//     (inference.Request.Hosts): unset, tpu-inference runs the engine on
//     the one host it starts on, and "ray" alone selects its Ray executor
//     over every host of a Ray cluster started first (platforms/
//     tpu_platform.py 394-418, scripts/multihost/run_cluster.sh);
//   - there, with replicas, TPU_MULTIPROCESS_DP=0: vllm serve's default, an
//     engine process a replica, pins every replica to the chips of the
//     host it starts on (platforms/tpu_platform.py 270-298,
//     worker/tpu_worker.py 270-293), where 0 runs them in the one engine,
//     data parallelism an axis of its mesh (layers/common/sharding.py
//     219-220, 307-312).
//
// The plan's warnings say so in its own words.
func vllmEnv(p inference.Plan) []string {
	var env []string
	if p.Request.AttentionDP() {
		env = append(env, newModelDesign+"=1")
	}
	if p.Request.Hosts(p.Best) > 1 {
		env = append(env, multihostBackend+"="+multihostRay)
		if p.Best.DP > 1 {
			env = append(env, multiprocessDP+"=0")
		}
	}
	return env
}

// ShellQuote joins a command line for a POSIX shell, quoting the
// arguments that need it (ShellWord).
func ShellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = ShellWord(a)
	}
	return strings.Join(out, " ")
}

// ShellWord is one argument for a POSIX shell: as it is where it holds
// only characters the shell reads as they are, else in single quotes.
func ShellWord(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
