package inference

import (
	"errors"
	"strings"
	"testing"

	"shardlab/model"
)

// TestErrorsKeepOutsideBraces: the errors spell the fields they name as
// {key} as a plan's notes do, and a name from outside that holds braces
// (a spec's model name) reads as written, never as a field.
func TestErrorsKeepOutsideBraces(t *testing.T) {
	flag := func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") }
	const odd = "x{tpu}{{y}}"

	r := noFitRequest(t, "llama3-405b", "tpu7x-8")
	r.Model.Name = odd
	_, err := Search(r)
	var ne *NoFitError
	if !errors.As(err, &ne) {
		t.Fatalf("llama3-405b named %q on tpu7x-8: %v, want a *NoFitError", odd, err)
	}
	for _, want := range []string{"--weights bf16: " + odd + "'s weights", "× --gpu-memory-utilization 0.92)"} {
		if got := ne.Phrase(flag); !strings.Contains(got, want) {
			t.Errorf("NoFitError.Phrase(flag) = %q, want %q in it", got, want)
		}
	}

	m, _ := model.Lookup("llama3-8b")
	m.Name = odd
	_, err = NewRequest(Request{Model: m, Slice: slice(t, "v6e-8"), MaxModelLen: m.SeqLen + 1, Concurrency: 1, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096})
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("max_model_len above %s's: %v, want a *FieldError", odd, err)
	}
	if got, want := fe.Phrase(flag), "--max-model-len 8193, want 2 to 8192 ("+odd+"'s max_position_embeddings)"; !strings.HasSuffix(got, want) {
		t.Errorf("FieldError.Phrase(flag) = %q, want it to end in %q", got, want)
	}
}
