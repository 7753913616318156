package export

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

func servePlan(t *testing.T, kv inference.Dtype) inference.Plan {
	m, _ := model.Lookup("llama3-70b")
	s, err := hw.ParseAcceleratorType("tpu7x-8")
	if err != nil {
		t.Fatal(err)
	}
	r, err := inference.NewRequest(inference.Request{Model: m, Slice: s, MaxModelLen: 8192, Concurrency: 64,
		PromptLen: 1024, OutputLen: 1024, KVCache: kv, MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	p, err := inference.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVLLMServeOptions: every option the command line carries is one vLLM
// defines, with a value it accepts, and every setting the plan fixes is
// there.
func TestVLLMServeOptions(t *testing.T) {
	for _, kv := range []inference.Dtype{inference.BF16, inference.FP8} {
		args := VLLMServe(servePlan(t, kv), "meta-llama/Meta-Llama-3-70B")
		if !slices.Equal(args[:3], []string{"vllm", "serve", "meta-llama/Meta-Llama-3-70B"}) {
			t.Errorf("command starts %q", args[:3])
		}
		seen, err := CheckVLLMServe(args)
		if err != nil {
			t.Errorf("kv %s: %v", kv, err)
			continue
		}
		for _, want := range []string{"--tensor-parallel-size", "--data-parallel-size", "--max-model-len", "--max-num-seqs",
			"--max-num-batched-tokens", "--kv-cache-dtype", "--block-size", "--gpu-memory-utilization"} {
			if _, ok := seen[want]; !ok {
				t.Errorf("kv %s: command lacks %s: %q", kv, want, args)
			}
		}
		if kv == inference.FP8 && seen["--kv-cache-dtype"] != "fp8" {
			t.Errorf("fp8 KV: --kv-cache-dtype %s", seen["--kv-cache-dtype"])
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got, want := ShellQuote([]string{"vllm", "serve", "it's here", "--x", "0.9"}), `vllm serve 'it'\''s here' --x 0.9`; got != want {
		t.Errorf("ShellQuote = %s, want %s", got, want)
	}
}

// TestCheckVLLMServeRefuses: CheckVLLMServe refuses an option vLLM does not
// define, a value it does not accept, and an option without a value.
func TestCheckVLLMServeRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"vllm", "serve", "m", "--tensor-parallel", "4"},
		{"vllm", "serve", "m", "--kv-cache-dtype", "bf16"},
		{"vllm", "serve", "m", "--max-model-len"},
		{"vllm", "run", "m"},
		// tpu-inference refuses attention data parallelism without
		// NEW_MODEL_DESIGN=1 (layers/common/sharding.py validate, and
		// platforms/tpu_platform.py for MLA, @b8692ff0)
		{"vllm", "serve", "m", "--additional-config", `{"sharding":{"sharding_strategy":{"enable_dp_attention":true}}}`},
		{"env", "NEW_MODEL_DESIGN=0", "vllm", "serve", "m", "--additional-config", `{"sharding":{"sharding_strategy":{"enable_dp_attention":true}}}`},
		{"env", "NEW_MODEL_DESIGN", "vllm", "serve", "m"},
		{"env", "vllm", "run", "m"},
		// vLLM parses --additional-config as a JSON object (json.loads):
		// a malformed one is refused, not read as attention DP off
		{"vllm", "serve", "m", "--additional-config", `{"sharding":`},
		{"vllm", "serve", "m", "--additional-config", `[1]`},
		// TPU_MULTIHOST_BACKEND is env_with_choices("", ["ray"]),
		// case-sensitive: set, anything but "ray" raises ValueError, ""
		// included ("" is only its value unset) (tpu_inference/envs.py
		// 88-132, 230-231 @b8692ff0)
		{"env", "TPU_MULTIHOST_BACKEND=", "vllm", "serve", "m"},
		{"env", "TPU_MULTIHOST_BACKEND=Ray", "vllm", "serve", "m"},
		{"env", "TPU_MULTIHOST_BACKEND=mp", "vllm", "serve", "m"},
		{"env", "TPU_MULTIHOST_BACKEND=ray,ray", "vllm", "serve", "m"},
		// env_bool takes 0, 1, true and false in any case, or "" (envs.py
		// 135-173)
		{"env", "TPU_MULTIPROCESS_DP=yes", "vllm", "serve", "m"},
		{"env", "NEW_MODEL_DESIGN=on", "vllm", "serve", "m"},
		// one engine process a replica is refused under attention DP
		// (platforms/tpu_platform.py 283-289)
		{"env", "NEW_MODEL_DESIGN=1", "TPU_MULTIPROCESS_DP=1", "vllm", "serve", "m", "--data-parallel-size", "2", "--additional-config", dpAttentionConfig},
	} {
		if _, err := CheckVLLMServe(args); err == nil {
			t.Errorf("CheckVLLMServe(%q) accepted", args)
		}
	}
}

// dpAttentionConfig is the --additional-config that turns on
// tpu-inference's attention data parallelism.
const dpAttentionConfig = `{"sharding":{"sharding_strategy":{"enable_dp_attention":true}}}`

// TestCheckVLLMServeEnvAccepts: CheckVLLMServe takes what tpu-inference
// takes for the variables VLLMServe sets (tpu_inference/envs.py
// @b8692ff0): TPU_MULTIHOST_BACKEND unset (its default, "": one host)
// or "ray"; TPU_MULTIPROCESS_DP and NEW_MODEL_DESIGN as env_bool reads
// them, "" as unset; and TPU_MULTIPROCESS_DP=1 under attention DP with
// one replica, where tpu-inference leaves the variable unread
// (platforms/tpu_platform.py 276-277).
func TestCheckVLLMServeEnvAccepts(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"vllm", "serve", "m"}, map[string]string{}},
		{[]string{"env", "TPU_MULTIHOST_BACKEND=ray", "vllm", "serve", "m"}, map[string]string{"TPU_MULTIHOST_BACKEND": "ray"}},
		{[]string{"env", "TPU_MULTIHOST_BACKEND=ray", "TPU_MULTIPROCESS_DP=0", "vllm", "serve", "m", "--data-parallel-size", "4"},
			map[string]string{"TPU_MULTIHOST_BACKEND": "ray", "TPU_MULTIPROCESS_DP": "0"}},
		{[]string{"env", "TPU_MULTIPROCESS_DP=True", "vllm", "serve", "m", "--data-parallel-size", "2"}, map[string]string{"TPU_MULTIPROCESS_DP": "True"}},
		{[]string{"env", "TPU_MULTIPROCESS_DP=", "vllm", "serve", "m"}, map[string]string{"TPU_MULTIPROCESS_DP": ""}},
		{[]string{"env", "NEW_MODEL_DESIGN=TRUE", "TPU_MULTIHOST_BACKEND=ray", "vllm", "serve", "m", "--additional-config", dpAttentionConfig},
			map[string]string{"NEW_MODEL_DESIGN": "TRUE", "TPU_MULTIHOST_BACKEND": "ray"}},
		{[]string{"env", "NEW_MODEL_DESIGN=1", "TPU_MULTIPROCESS_DP=1", "vllm", "serve", "m", "--data-parallel-size", "1", "--additional-config", dpAttentionConfig},
			map[string]string{"NEW_MODEL_DESIGN": "1", "TPU_MULTIPROCESS_DP": "1"}},
	} {
		seen, err := CheckVLLMServe(c.args)
		if err != nil {
			t.Errorf("CheckVLLMServe(%q): %v", c.args, err)
			continue
		}
		for name, want := range c.env {
			if got, ok := seen[name]; !ok || got != want {
				t.Errorf("CheckVLLMServe(%q): %s = %q (set %v), want %q", c.args, name, got, ok, want)
			}
		}
	}
}

// TestVLLMServeMultiHost: a plan whose devices span hosts gets a line
// that starts `env TPU_MULTIHOST_BACKEND=ray`, which alone selects
// tpu-inference's Ray executor over the hosts (platforms/tpu_platform.py
// 394-418 @b8692ff0), with TPU_MULTIPROCESS_DP=0 where it has replicas
// (else vllm serve's one engine process a replica keeps every replica on
// the host it starts on: worker/tpu_worker.py 270-293); a one-host plan's
// line sets neither. Hosts by hand: 4 chips a v6e VM of a multi-host
// slice, so v6e-16 is 4 hosts and v6e-64 16; tpu7x-16 is 2 VMs of 4
// chips; tpu7x-8 and v6e-8 (one ct6e-standard-8t) are one.
func TestVLLMServeMultiHost(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		tp         int
		w          inference.Dtype
		env        []string
	}{
		{"llama3-70b", "tpu7x-8", 0, inference.BF16, nil},
		{"llama3-8b", "v6e-8", 8, inference.BF16, nil},
		{"llama3-405b", "v6e-64", 0, inference.BF16, []string{"TPU_MULTIHOST_BACKEND=ray"}},
		{"llama3-8b", "v6e-16", 4, inference.BF16, []string{"TPU_MULTIHOST_BACKEND=ray", "TPU_MULTIPROCESS_DP=0"}},
		{"deepseek3-671b", "tpu7x-16", 0, inference.FP8, []string{"NEW_MODEL_DESIGN=1", "TPU_MULTIHOST_BACKEND=ray"}},
	} {
		m, _ := model.Lookup(c.model)
		s, err := hw.ParseAcceleratorType(c.tpu)
		if err != nil {
			t.Fatal(err)
		}
		r := inference.DefaultRequest()
		r.Model, r.Slice, r.TP, r.Weights, r.KVCache = m, s, c.tp, c.w, c.w
		if r, err = inference.NewRequest(r); err != nil {
			t.Fatal(err)
		}
		p, err := inference.Search(r)
		if err != nil {
			t.Fatalf("%s on %s: %v", c.model, c.tpu, err)
		}
		args := VLLMServe(p, m.HFModel)
		var env []string
		if args[0] == "env" {
			env = args[1:slices.Index(args, "vllm")]
		}
		if !slices.Equal(env, c.env) {
			t.Errorf("%s on %s, TP %d × DP %d: env %q, want %q", c.model, c.tpu, p.Best.TP, p.Best.DP, env, c.env)
		}
		if _, err := CheckVLLMServe(args); err != nil {
			t.Errorf("%s on %s: %v", c.model, c.tpu, err)
		}
		if j := Serving(p, args); !slices.Equal(j.Command, args) || (c.env != nil && !strings.HasPrefix(j.CommandLine, strings.Join(append([]string{"env"}, c.env...), " "))) {
			t.Errorf("%s on %s: JSON vllm_serve_args %q, vllm_serve_command %q, want the line %q", c.model, c.tpu, j.Command, j.CommandLine, args)
		}
	}
}

// TestVLLMServeMoEAndMLA: a mixture of experts is served with
// --enable-expert-parallel, which takes no value (a BooleanOptionalAction
// in vLLM's arg_utils.py @99d7eb5d); latent attention with
// enable_dp_attention in --additional-config and no --block-size
// (tpu-inference sets its MLA page, 1024 tokens, only when the flag is
// absent: platforms/tpu_platform.py 367-373 @b8692ff0).
func TestVLLMServeMoEAndMLA(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		w          inference.Dtype
		mla        bool
	}{{"mixtral-8x7b", "tpu7x-8", inference.BF16, false}, {"deepseek3-671b", "tpu7x-16", inference.FP8, true}} {
		m, _ := model.Lookup(c.model)
		s, err := hw.ParseAcceleratorType(c.tpu)
		if err != nil {
			t.Fatal(err)
		}
		r := inference.DefaultRequest()
		r.Model, r.Slice, r.Weights, r.KVCache = m, s, c.w, c.w
		if r, err = inference.NewRequest(r); err != nil {
			t.Fatal(err)
		}
		p, err := inference.Search(r)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		args := VLLMServe(p, m.HFModel)
		seen, err := CheckVLLMServe(args)
		if err != nil {
			t.Errorf("%s: %v", c.model, err)
			continue
		}
		// a replica served with attention data parallelism has one
		// scheduler a rank, each held to --max-num-seqs
		want := p.Best.SeqsEach
		if c.mla {
			want = (want + p.Best.AttentionDP - 1) / p.Best.AttentionDP
		}
		if seen["--max-num-seqs"] != strconv.Itoa(want) || c.mla != (p.Best.AttentionDP > 1) {
			t.Errorf("%s: --max-num-seqs %s for %d sequences a replica over %d attention-DP ranks, want %d", c.model, seen["--max-num-seqs"], p.Best.SeqsEach, p.Best.AttentionDP, want)
		}
		// attention data parallelism runs only under NEW_MODEL_DESIGN=1
		// (tpu-inference layers/common/sharding.py validate @b8692ff0), set
		// in the command's environment
		if env := slices.Equal(args[:2], []string{"env", "NEW_MODEL_DESIGN=1"}); env != c.mla {
			t.Errorf("%s: command starts %q: NEW_MODEL_DESIGN=1 %v, want %v", c.model, args[:2], env, c.mla)
		}
		_, block := seen["--block-size"]
		if seen["--enable-expert-parallel"] != "true" || block == c.mla || c.mla != (seen["--additional-config"] == `{"sharding":{"sharding_strategy":{"enable_dp_attention":true}}}`) {
			t.Errorf("%s: %q", c.model, args)
		}
	}
	// the flag takes no value: a value after it is read as an option and refused
	if _, err := CheckVLLMServe([]string{"vllm", "serve", "m", "--enable-expert-parallel", "true"}); err == nil {
		t.Error("--enable-expert-parallel true accepted")
	}
	if seen, err := CheckVLLMServe([]string{"vllm", "serve", "m", "--enable-expert-parallel", "--max-num-seqs", "8"}); err != nil || seen["--max-num-seqs"] != "8" {
		t.Errorf("--enable-expert-parallel --max-num-seqs 8: %v, %v", seen, err)
	}
	dp := []string{"env", "NEW_MODEL_DESIGN=1", "vllm", "serve", "m", "--additional-config", `{"sharding":{"sharding_strategy":{"enable_dp_attention":true}}}`}
	if _, err := CheckVLLMServe(dp); err != nil {
		t.Errorf("%q: %v", dp, err)
	}
}

// FuzzCheckVLLMServe: any argument list is accepted or refused, never a
// panic.
func FuzzCheckVLLMServe(f *testing.F) {
	for _, s := range []string{"vllm serve m --enable-expert-parallel", "vllm serve m --max-num-seqs", "env A=1 vllm serve m", "env vllm", "vllm serve m --kv-cache-dtype fp8 --enable-expert-parallel --block-size 16", "vllm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = CheckVLLMServe(strings.Fields(s))
	})
}
