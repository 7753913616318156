package export

import (
	_ "embed"
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

// CheckVLLMServe holds a vllm serve command line (VLLMServe's) to vLLM's
// engine args: after "vllm serve MODEL", option and value pairs, each
// option one vLLM defines and each value one it accepts where it lists
// them. It returns the options' values.
func CheckVLLMServe(args []string) (map[string]string, error) {
	if len(args) < 3 || args[0] != "vllm" || args[1] != "serve" {
		return nil, fmt.Errorf("export: vllm serve: command %q, want vllm serve MODEL and options", args)
	}
	seen := map[string]string{}
	for i := 3; i < len(args); i += 2 {
		choices, ok := vllmServeOptions[args[i]]
		if ok && slices.Equal(choices, []string{flagNoValue}) {
			seen[args[i]] = "true" // a BooleanOptionalAction takes no value
			i--
			continue
		}
		switch {
		case !ok:
			return nil, fmt.Errorf("export: vllm serve: %s is not one of vLLM's engine args (testdata/vllm_serve_options.txt)", args[i])
		case i+1 >= len(args):
			return nil, fmt.Errorf("export: vllm serve: %s has no value", args[i])
		case choices != nil && !slices.Contains(choices, args[i+1]):
			return nil, fmt.Errorf("export: vllm serve: %s %s, want one of %v", args[i], args[i+1], choices)
		}
		seen[args[i]] = args[i+1]
	}
	return seen, nil
}
