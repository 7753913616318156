package export

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

//go:embed testdata/vllm_serve_options.txt
var vllmServeOptionsFile string

// vllmServeOptions is vLLM's engine args that a vllm serve line may carry
// (testdata/vllm_serve_options.txt, which cites vLLM's arg_utils.py and
// commit): each option, and the values it accepts where the file lists
// them.
var vllmServeOptions = func() map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(vllmServeOptionsFile, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		out[f[0]] = nil
		if len(f) > 1 {
			out[f[0]] = strings.Split(f[1], ",")
		}
	}
	return out
}()

// flagNoValue marks an option of testdata/vllm_serve_options.txt that
// takes no value (vLLM's bool engine args, argparse.BooleanOptionalAction).
const flagNoValue = "(no-value)"

// newModelDesign is tpu-inference's environment variable for its new
// model design (tpu_inference/envs.py @b8692ff0, read by env_bool: "1" or
// "true" in any case), under which alone it runs attention data
// parallelism.
const newModelDesign = "NEW_MODEL_DESIGN"

// multihostBackend is tpu-inference's environment variable for its
// multi-host executor, read by env_with_choices with the default "" and
// the one choice multihostRay (tpu_inference/envs.py 230-231 @b8692ff0):
// unset it is "", one host; set, it must be "ray", case-sensitive, and
// any other value, "" included, raises ValueError (env_with_choices,
// envs.py 88-132).
const (
	multihostBackend = "TPU_MULTIHOST_BACKEND"
	multihostRay     = "ray"
)

// multiprocessDP is tpu-inference's environment variable that runs
// data-parallel replicas as one engine process each (1) or in one engine
// (0), read by env_bool with no default (envs.py 239-240 @b8692ff0): unset
// or "", tpu-inference chooses (platforms/tpu_platform.py 270-298).
const multiprocessDP = "TPU_MULTIPROCESS_DP"

// CheckVLLMServe holds a vllm serve command line (VLLMServe's) to vLLM's
// engine args: optionally `env NAME=VALUE ...`, then after "vllm serve
// MODEL", option and value pairs, each option one vLLM defines and each
// value one it accepts where it lists them; and to tpu-inference's rule
// that enable_dp_attention in --additional-config runs only with
// NEW_MODEL_DESIGN=1 in the environment (layers/common/sharding.py
// ShardingConfigManager.validate @b8692ff0); and to the values
// tpu-inference takes for the variables VLLMServe sets (checkEnv). It
// returns the options' values and the environment's, by name.
func CheckVLLMServe(args []string) (map[string]string, error) {
	seen := map[string]string{}
	if len(args) > 0 && args[0] == "env" {
		args = args[1:]
		for len(args) > 0 && args[0] != "vllm" {
			name, value, ok := strings.Cut(args[0], "=")
			if !ok || name == "" {
				return nil, fmt.Errorf("export: vllm serve: env argument %q, want NAME=VALUE", args[0])
			}
			seen[name] = value
			args = args[1:]
		}
	}
	if len(args) < 3 || args[0] != "vllm" || args[1] != "serve" {
		return nil, fmt.Errorf("export: vllm serve: command %q, want vllm serve MODEL and options", args)
	}
	if err := checkVLLMOptions(args, seen); err != nil {
		return nil, err
	}
	dp, err := dpAttention(seen["--additional-config"])
	if err != nil {
		return nil, err
	}
	if err := checkEnv(seen, dp); err != nil {
		return nil, err
	}
	return seen, nil
}

// checkEnv holds the environment of a vllm serve line, in seen (a
// variable absent is unset), to tpu-inference's reading of it
// (tpu_inference/envs.py @b8692ff0): NEW_MODEL_DESIGN and
// TPU_MULTIPROCESS_DP are env_bool values, NEW_MODEL_DESIGN true where dp
// (attention data parallelism) is on, TPU_MULTIPROCESS_DP not true then
// with replicas (platforms/tpu_platform.py 283-289 raises ValueError),
// and TPU_MULTIHOST_BACKEND, where set, "ray".
func checkEnv(seen map[string]string, dp bool) error {
	design, err := envBool(seen, newModelDesign)
	if err != nil {
		return err
	}
	if dp && !design {
		return fmt.Errorf("export: vllm serve: enable_dp_attention with %s=%q, want %s=1: tpu-inference refuses attention data parallelism without it (layers/common/sharding.py @b8692ff0)",
			newModelDesign, seen[newModelDesign], newModelDesign)
	}
	multi, err := envBool(seen, multiprocessDP)
	if err != nil {
		return err
	}
	if replicas := seen["--data-parallel-size"]; dp && multi && replicas != "" && replicas != "1" {
		return fmt.Errorf("export: vllm serve: %s=%s with enable_dp_attention and --data-parallel-size %s, want %s=0 or unset: tpu-inference refuses one engine process a replica under attention data parallelism (platforms/tpu_platform.py @b8692ff0)",
			multiprocessDP, seen[multiprocessDP], replicas, multiprocessDP)
	}
	if v, set := seen[multihostBackend]; set && v != multihostRay {
		return fmt.Errorf("export: vllm serve: %s=%q, want %s or the variable unset (one host): tpu-inference takes no other value, \"\" included (env_with_choices in tpu_inference/envs.py @b8692ff0)",
			multihostBackend, v, multihostRay)
	}
	return nil
}

// dpAttention reports whether an --additional-config JSON value turns on
// tpu-inference's attention data parallelism.
// A value that is not a JSON object is refused, as vLLM refuses it
// (its --additional-config is parsed with json.loads into a dict).
func dpAttention(config string) (bool, error) {
	var c struct {
		Sharding struct {
			Strategy struct {
				DPAttention bool `json:"enable_dp_attention"`
			} `json:"sharding_strategy"`
		} `json:"sharding"`
	}
	if config == "" {
		return false, nil
	}
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return false, fmt.Errorf("export: vllm serve: --additional-config %q: %v, want a JSON object", config, err)
	}
	return c.Sharding.Strategy.DPAttention, nil
}

// envBool is the environment variable name of seen as tpu-inference's
// env_bool reads it (tpu_inference/envs.py 135-173 @b8692ff0): "1" or
// "true" in any case is true; unset, "", "0" or "false" in any case false
// (or tpu-inference's own choice, where the variable has no default);
// any other value it refuses with ValueError, and so does envBool.
func envBool(seen map[string]string, name string) (bool, error) {
	switch v := seen[name]; {
	case v == "1" || strings.EqualFold(v, "true"):
		return true, nil
	case v == "" || v == "0" || strings.EqualFold(v, "false"):
		return false, nil
	default:
		return false, fmt.Errorf("export: vllm serve: %s=%q, want 0, 1, true or false (in any case): tpu-inference reads it with env_bool (tpu_inference/envs.py @b8692ff0)", name, v)
	}
}

// checkVLLMOptions reads args' option and value pairs after "vllm serve
// MODEL" into seen.
func checkVLLMOptions(args []string, seen map[string]string) error {
	for i := 3; i < len(args); i += 2 {
		choices, ok := vllmServeOptions[args[i]]
		if ok && slices.Equal(choices, []string{flagNoValue}) {
			seen[args[i]] = "true" // a BooleanOptionalAction takes no value
			i--
			continue
		}
		switch {
		case !ok:
			return fmt.Errorf("export: vllm serve: %s is not one of vLLM's engine args (testdata/vllm_serve_options.txt)", args[i])
		case i+1 >= len(args):
			return fmt.Errorf("export: vllm serve: %s has no value", args[i])
		case choices != nil && !slices.Contains(choices, args[i+1]):
			return fmt.Errorf("export: vllm serve: %s %s, want one of %v", args[i], args[i+1], choices)
		}
		seen[args[i]] = args[i+1]
	}
	return nil
}
