package model

import "testing"

// TestMaxContext: each catalog model's context against the value its
// catalog entry cites (config.json's max_position_embeddings or the model
// card's context), and SeqLen where the catalog records none. Sources:
//
//	gpt3-175b        2048    Brown et al. 2020, Table 2.1 (n_ctx)
//	llama2-*         4096    Llama 2 paper, Table 1 (context length 4k)
//	llama3-8b, -70b  8192    meta-llama/llama3 MODEL_CARD.md @13e795f9 (8k)
//	llama3-405b      131072  MaxText hf_model_configs.py @e591f30c llama31_405b_config
//	gemma-7b         8192    config.json copies naming google/gemma-7b
//	gemma-2b         8192    transformers convert_gemma_weights_to_hf.py @dd28cbcc 56-62
//	                         (GemmaConfig's default kept); gemma_pytorch config.py @014acb7a 52
//	gemma4-*         262144  MaxText hf_model_configs.py gemma4_26b_dict (31b copies it)
//	mixtral-8x7b     32768   hf_model_configs.py mixtral_8x7b_dict
//	deepseek3-671b   163840  MaxText deepseek3-671b.yml 50; hf_model_configs.py
//	qwen3-32b        40960   hf_model_configs.py qwen3_32b_config
//	qwen3-235b-a22b  40960   its config.json (a verbatim copy; "32,768 natively" by its card)
//	qwen3-coder-480b 262144  hf_model_configs.py qwen3_coder_480b_a35b_config
//	qwen3.5-397b     262144  hf_model_configs.py qwen3_5_397b_a17b_dict
//	mixtral-8x22b    65536   hf_model_configs.py mixtral_8x22b_dict
//	llama4-maverick  1048576 its config.json's text_config (a copy in NVIDIA/TensorRT-LLM
//	                         test_modeling_llama_min_latency.py @0074a2241768); "1M" by its card
//	none recorded: gemma2-9b, gemma2-27b (8192)
func TestMaxContext(t *testing.T) {
	want := map[string]int{
		"gpt3-175b": 2048, "llama2-7b": 4096, "llama2-13b": 4096, "llama2-70b": 4096,
		"llama3-8b": 8192, "llama3-70b": 8192, "llama3-405b": 131072, "gemma-7b": 8192,
		"gemma-2b": 8192, "gemma2-9b": 8192, "gemma2-27b": 8192, "gemma4-31b": 262144, "gemma4-26b-a4b": 262144,
		"mixtral-8x7b": 32768, "deepseek3-671b": 163840, "qwen3-32b": 40960, "qwen3-235b-a22b": 40960,
		"qwen3-coder-480b-a35b": 262144, "qwen3.5-397b-a17b": 262144, "mixtral-8x22b": 65536, "llama4-maverick": 1048576,
	}
	none := map[string]bool{"gemma2-9b": true, "gemma2-27b": true}
	for _, s := range Catalog() {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("%s: no cited context in this test; add the one its catalog entry cites", s.Name)
			continue
		}
		if got := s.MaxContext(); got != w {
			t.Errorf("%s: MaxContext() = %d, want %d", s.Name, got, w)
		}
		if none[s.Name] != (s.MaxPositions == 0) {
			t.Errorf("%s: MaxPositions %d; recorded: %v, want %v", s.Name, s.MaxPositions, s.MaxPositions != 0, !none[s.Name])
		}
		if s.MaxContext() < s.SeqLen {
			t.Errorf("%s: context %d below its sequence length %d", s.Name, s.MaxContext(), s.SeqLen)
		}
	}
}

// TestMaxPositionsValidated: a spec file's max_position_embeddings is 0
// (its seq_len) or a positive count, and the error names the field.
func TestMaxPositionsValidated(t *testing.T) {
	s, _ := Lookup("llama3-8b")
	s.MaxPositions = -1
	if err := s.Validate(); err == nil {
		t.Error("max_position_embeddings -1 validated")
	} else if fe, ok := err.(*FieldError); !ok || fe.Field != "max_position_embeddings" {
		t.Errorf("max_position_embeddings -1: %v, want a FieldError on max_position_embeddings", err)
	}
}

// TestAttentionChunkValidated: a spec's attention_chunk_size is 0 (none)
// or a positive count, and the error names the field.
func TestAttentionChunkValidated(t *testing.T) {
	s, _ := Lookup("llama4-maverick")
	if s.AttentionChunk != 8192 {
		t.Errorf("llama4-maverick attention_chunk_size %d, want 8192 (its config.json)", s.AttentionChunk)
	}
	s.AttentionChunk = -1
	if err := s.Validate(); err == nil {
		t.Error("attention_chunk_size -1 validated")
	} else if fe, ok := err.(*FieldError); !ok || fe.Field != "attention_chunk_size" {
		t.Errorf("attention_chunk_size -1: %v, want a FieldError on attention_chunk_size", err)
	}
}
