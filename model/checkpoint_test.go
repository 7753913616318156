package model

import (
	"strings"
	"testing"
)

// TestCheckpointDtype: a checkpoint format in the catalog is data with a
// source, and Validate refuses one without a source or a repository, or
// in a format serving has no name for. DeepSeek-V3's is fp8
// (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md); Llama 3's is bf16 (none
// recorded).
func TestCheckpointDtype(t *testing.T) {
	for name, want := range map[string]string{"deepseek3-671b": "fp8", "llama3-70b": ""} {
		m, ok := Lookup(name)
		if !ok || m.HFDtype != want {
			t.Errorf("%s: hf_dtype %q, want %q", name, m.HFDtype, want)
		}
	}
	for _, name := range Names() {
		m, _ := Lookup(name)
		if m.HFDtype != "" && (m.HFDtypeSource == "" || m.HFModel == "") {
			t.Errorf("%s: hf_dtype %s without a source or a repository", name, m.HFDtype)
		}
	}
	m, _ := Lookup("deepseek3-671b")
	for _, c := range []struct{ dtype, source string }{{"fp8", ""}, {"fp4", "a card"}} {
		bad := m
		bad.HFDtype, bad.HFDtypeSource = c.dtype, c.source
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "hf_dtype") {
			t.Errorf("hf_dtype %q with source %q: %v, want an error naming hf_dtype", c.dtype, c.source, err)
		}
	}
}
