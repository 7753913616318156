package model

import (
	"sort"
	"strings"
)

// catalog holds published models. Shapes come from each model's paper or
// released config; Published is the parameter count its authors give.
// HFModel is the Hugging Face repository of the base (pretrained, not
// instruction-tuned) model the entry describes, from its model card on
// huggingface.co; GPT-3's weights were never released, so it has none.
var catalog = [...]Spec{
	{
		// Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
		// n_layers 96, d_model 12288, n_heads 96, d_head 128, context 2048; d_ff = 4·d_model;
		// GPT-2 BPE vocabulary of 50257; learned positions, LayerNorm, biases.
		Name: "gpt3-175b", Layers: 96, DModel: 12288, Heads: 96, DFF: 49152, Vocab: 50257, SeqLen: 2048, MaxPositions: 2048,
		TiedEmbeddings: true, LearnedPositions: true, Biases: true, LayerNorm: true,
		Published: 175e9, Source: "Brown et al. 2020, Table 2.1",
	},
	{
		// Touvron et al. 2023, "Llama 2", Table 1 and the released config.json
		// (hidden 4096, intermediate 11008, 32 layers, 32 heads, vocab 32000).
		// Table 1 gives every Llama 2 a context length of 4k, config.json's
		// max_position_embeddings 4096 (as copies naming meta-llama/Llama-2-7b-hf
		// print it, e.g. huggingface.co/abhishek/llama-2-7b-hf-small-shards).
		Name: "llama2-7b", Layers: 32, DModel: 4096, Heads: 32, DFF: 11008, Vocab: 32000, SeqLen: 4096, MaxPositions: 4096, GatedMLP: true,
		Published: 6_738_415_616, Source: "meta-llama/Llama-2-7b-hf safetensors metadata (6.74B)",
		HFModel: "meta-llama/Llama-2-7b-hf",
	},
	{
		// Llama 2 Table 1: context length 4k.
		Name: "llama2-13b", Layers: 40, DModel: 5120, Heads: 40, DFF: 13824, Vocab: 32000, SeqLen: 4096, MaxPositions: 4096, GatedMLP: true,
		Published: 13_015_864_320, Source: "meta-llama/Llama-2-13b-hf safetensors metadata (13.0B)",
		HFModel: "meta-llama/Llama-2-13b-hf",
	},
	{
		// Llama 2 70B uses grouped-query attention with 8 KV heads (Touvron et al. 2023, §2.2);
		// Table 1: context length 4k.
		Name: "llama2-70b", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, DFF: 28672, Vocab: 32000, SeqLen: 4096, MaxPositions: 4096, GatedMLP: true,
		Published: 68_976_648_192, Source: "meta-llama/Llama-2-70b-hf safetensors metadata (69.0B)",
		HFModel: "meta-llama/Llama-2-70b-hf",
	},
	{
		// Llama Team 2024, "The Llama 3 Herd of Models", Table 3: 32 layers, 4096 model
		// dim, 14336 FFN dim, 32 heads, 8 KV heads, vocabulary 128,000 (128,256 in the config).
		// Context length 8k for the 8B and the 70B: meta-llama/llama3 MODEL_CARD.md @13e795f9.
		Name: "llama3-8b", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 8, DFF: 14336, Vocab: 128256, SeqLen: 8192, MaxPositions: 8192, GatedMLP: true,
		Published: 8_030_261_248, Source: "Llama 3 Herd Table 3; meta-llama/Meta-Llama-3-8B safetensors metadata (8.03B)",
		HFModel: "meta-llama/Meta-Llama-3-8B",
	},
	{
		Name: "llama3-70b", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, DFF: 28672, Vocab: 128256, SeqLen: 8192, MaxPositions: 8192, GatedMLP: true,
		Published: 70_553_706_496, Source: "Llama 3 Herd Table 3; meta-llama/Meta-Llama-3-70B safetensors metadata (70.6B)",
		HFModel: "meta-llama/Meta-Llama-3-70B",
	},
	{
		// The 405B model was released only as Llama 3.1 (128K context, the same
		// shape); its base repository is meta-llama/Llama-3.1-405B. Its config.json's
		// max_position_embeddings is 131072 (MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c llama31_405b_config).
		Name: "llama3-405b", Layers: 126, DModel: 16384, Heads: 128, KVHeads: 8, DFF: 53248, Vocab: 128256, SeqLen: 8192, MaxPositions: 131072, GatedMLP: true,
		Published: 405e9, Source: "Llama 3 Herd Table 3 (405B)",
		HFModel: "meta-llama/Llama-3.1-405B",
	},
	{
		// Gemma Team 2024, "Gemma: Open Models Based on Gemini Research and
		// Technology" (arXiv 2403.08295), Table 1, as MaxText's configs/models/gemma-7b.yml
		// @e591f30c: d_model 3072, 28 layers, 16 heads and 16 KV heads of 256,
		// feedforward 24576 (GeGLU), vocab 256128, tied embeddings. Its config.json's
		// max_position_embeddings is 8192, as copies naming google/gemma-7b print it
		// (huggingface.co/PrunaAI/google-gemma-7b-HQQ-4bit-smashed config.json).
		Name: "gemma-7b", Layers: 28, DModel: 3072, Heads: 16, KVHeads: 16, HeadDim: 256, DFF: 24576, Vocab: 256128, SeqLen: 8192, MaxPositions: 8192,
		GatedMLP: true, TiedEmbeddings: true,
		Published: 8_538_074_112, Source: "Gemma Table 2: 786,825,216 embedding + 7,751,248,896 non-embedding",
		HFModel: "google/gemma-7b",
	},
	{
		// Gemma 2B, the same paper's Table 1, as MaxText's configs/models/gemma-2b.yml
		// @e591f30c: d_model 2048, 18 layers, 8 heads and one KV head (multi-query) of
		// 256, feedforward 16384 (GeGLU), vocab 256128, tied embeddings. Its config.json's
		// max_position_embeddings is 8192, as gemma-7b's: transformers' converter that wrote
		// it sets no other (src/transformers/models/gemma/convert_gemma_weights_to_hf.py
		// @dd28cbcc lines 56-62, gemma_2b_config, over GemmaConfig's default
		// max_position_embeddings=8192, configuration_gemma.py @3676fc80), as Google's
		// reference does (google/gemma_pytorch gemma/config.py @014acb7a line 52, the
		// default get_config_for_2b keeps, 108-116).
		Name: "gemma-2b", Layers: 18, DModel: 2048, Heads: 8, KVHeads: 1, HeadDim: 256, DFF: 16384, Vocab: 256128, SeqLen: 8192, MaxPositions: 8192,
		GatedMLP: true, TiedEmbeddings: true,
		Published: 2_506_434_560, Source: "Gemma Table 2: 524,550,144 embedding + 1,981,884,416 non-embedding",
		HFModel: "google/gemma-2b",
	},
	{
		// Gemma Team 2024, "Gemma 2", Table 1: d_model 3584, 42 layers, 16 heads,
		// 8 KV heads, head size 256, feedforward 14336 (x2 for GeGLU), vocab 256128;
		// pre- and post-norms on both sub-layers; tied embeddings. Its layers
		// alternate local attention over a 4096-token sliding window with
		// global attention over the 8192-token context, the same heads in both
		// (Table 1: sliding window size 4096, global attention span 8192; HF
		// config sliding_window 4096; MaxText configs/models/gemma2-9b.yml
		// @e591f30c: sliding_window_size 4096 and 21 decoder layers, each a
		// [local_attention, global_attention] pair): the even layers (from 0)
		// local, as HF's Gemma 2 layers are (is_sliding for layer_idx % 2 == 0).
		// Its config.json is not read: the cap stays the 8192-token global span (MaxContext = SeqLen).
		Name: "gemma2-9b", Layers: 42, DModel: 3584, Heads: 16, KVHeads: 8, HeadDim: 256, DFF: 14336, Vocab: 256128, SeqLen: 8192,
		SlidingWindow: 4096, GlobalAttentionEvery: 2,
		GatedMLP: true, TiedEmbeddings: true, NormsPerLayer: 4,
		Published: 9_242_164_736, Source: "Gemma 2 Table 2: 917,962,752 embedding + 8,324,201,984 non-embedding",
		HFModel: "google/gemma-2-9b",
	},
	{
		// Gemma 2 27B, the same paper's Table 1: d_model 4608, 46 layers, 32
		// heads, 16 KV heads of 128, feedforward 36864; local and global
		// layers alternating as gemma2-9b's, sliding window 4096 (HF config
		// sliding_window 4096; MaxText configs/models/gemma2-27b.yml @e591f30c:
		// sliding_window_size 4096, 23 [local, global] decoder layers).
		// Its config.json is not read: the cap stays the 8192-token global span (MaxContext = SeqLen).
		Name: "gemma2-27b", Layers: 46, DModel: 4608, Heads: 32, KVHeads: 16, HeadDim: 128, DFF: 36864, Vocab: 256128, SeqLen: 8192,
		SlidingWindow: 4096, GlobalAttentionEvery: 2,
		GatedMLP: true, TiedEmbeddings: true, NormsPerLayer: 4,
		Published: 27_227_718_144, Source: "Gemma 2 Table 2: 26,047,480,320 non-embedding, plus the 256128 x 4608 embedding",
		HFModel: "google/gemma-2-27b",
	},
	{
		// Gemma 4 31B, the text decoder, as MaxText's configs/models/gemma4-31b.yml @e591f30c
		// (AI-Hypercomputer/maxtext, read 2026-12-05) gives it: 60 layers, d_model 5376, 32
		// query heads; local (sliding-window) layers 16 KV heads of 256, global layers 4 KV
		// heads of 512 (global_num_kv_heads, global_head_dim; queries 512 wide too) whose
		// key projection serves as the value (share_kv_projections: true); GeGLU d_ff 21504,
		// vocab 262144, tied (logits_via_embedding), sliding_window_size 1024; pre- and
		// post-norms on both sub-layers. The layer pattern is models/gemma4.py
		// GEMMA4_ATTENTION_PATTERN: five LOCAL_SLIDING then one GLOBAL. vllm-project/
		// tpu-inference @b8692ff0 tpu_inference/models/jax/gemma4.py reads the same from
		// the HF config (layer_types, sliding_window, num_global_key_value_heads,
		// global_head_dim, attention_k_eq_v) and models/common/kv_share.py says 26B and
		// 31B share no KV between layers (num_kv_shared_layers 0). Its context is 262,144
		// tokens (the model card, "256K"; max_position_embeddings 262144 in the text_config of
		// MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c gemma4_26b_dict, which gemma4_31b_dict copies). Not counted: the query, key and value norms and
		// the layer scalar (about 0.2M). The ~550M vision encoder is not part of it.
		Name: "gemma4-31b", Layers: 60, DModel: 5376, Heads: 32, KVHeads: 16, HeadDim: 256, DFF: 21504, Vocab: 262144, SeqLen: 262144, MaxPositions: 262144,
		GatedMLP: true, TiedEmbeddings: true, NormsPerLayer: 4,
		SlidingWindow: 1024, GlobalAttentionEvery: 6, GlobalKVHeads: 4, GlobalHeadDim: 512, GlobalKeyAsValue: true,
		Published: 30.7e9, Source: "Gemma 4 model card, 2026-04-02 (31B dense: 30.7B parameters), as andysmith.ai/bib quotes it, read 2026-12-05",
		// The base checkpoint: MaxText's tests/end_to_end/tpu/gemma4/31b/convert_gemma4_pt.sh
		// names it google/gemma-4-31b; cased as tpu-inference's google/gemma-4-31B-it.
		HFModel: "google/gemma-4-31B",
	},
	{
		// Gemma 4 26B-A4B, the text decoder, as MaxText's configs/models/gemma4-26b.yml
		// @e591f30c (read 2026-12-05): 30 layers, d_model 2816, 16 query heads; local layers
		// 8 KV heads of 256, global layers 2 KV heads of 512 with keys as values, vocab
		// 262144 tied, sliding window 1024, five local layers to one global (models/
		// gemma4.py); every layer a mixture of 128 GeGLU experts of width 704 (base_moe_mlp_dim),
		// 8 a token, beside one shared MLP of width 2112 (shared_experts: 1 at base_mlp_dim:
		// maxtext_utils.get_shared_expert_mlp_dim uses mlp_dim for GEMMA4). The MoE block's
		// extra norms and router scale (about 0.5M) are not counted. max_position_embeddings
		// 262144: MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c gemma4_26b_dict's text_config.
		Name: "gemma4-26b-a4b", Layers: 30, DModel: 2816, Heads: 16, KVHeads: 8, HeadDim: 256, DFF: 2112, Vocab: 262144, SeqLen: 262144, MaxPositions: 262144,
		GatedMLP: true, TiedEmbeddings: true, NormsPerLayer: 4,
		Experts: 128, ExpertsPerToken: 8, SharedExperts: 1, ExpertDFF: 704, SharedExpertDFF: 2112,
		SlidingWindow: 1024, GlobalAttentionEvery: 6, GlobalKVHeads: 2, GlobalHeadDim: 512, GlobalKeyAsValue: true,
		Published: 25.2e9, PublishedActive: 3.8e9,
		Source: "Gemma 4 26B A4B model card, 2026-04-02 (25.2B total, 3.8B active), as vast.ai/model/gemma-4-26b-a4b-it quotes it, read 2026-12-05",
		// The base checkpoint: MaxText's tests/end_to_end/tpu/gemma4/26b/convert_gemma4_pt.sh
		// names it google/gemma-4-26b-a4b; cased as tpu-inference's google/gemma-4-26B-A4B-it.
		HFModel: "google/gemma-4-26B-A4B",
	},
	{
		// Jiang et al. 2024, "Mixtral of Experts" (arXiv 2401.04088), Table 1:
		// dim 4096, n_layers 32, head_dim 128, hidden_dim 14336, n_heads 32,
		// n_kv_heads 8, vocab_size 32000, num_experts 8, top_k_experts 2;
		// §2: "47B total parameters ... 13B active" (the model card: 46.7B
		// and 12.9B). Every layer is MoE; embeddings untied. max_position_embeddings 32768:
		// MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c mixtral_8x7b_dict, "from" Mixtral-8x7B-Instruct-v0.1's config.json (the base's shape).
		Name: "mixtral-8x7b", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 8, DFF: 14336, Vocab: 32000, SeqLen: 4096, MaxPositions: 32768, GatedMLP: true,
		Experts: 8, ExpertsPerToken: 2,
		Published: 46_700_000_000, PublishedActive: 12_900_000_000, Source: "Mixtral of Experts, Table 1 and §2 (46.7B total, 12.9B active)",
		HFModel: "mistralai/Mixtral-8x7B-v0.1",
	},
	{
		// DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" (arXiv 2412.19437) §4.2 and
		// the released config.json, as MaxText's configs/models/deepseek3-671b.yml @e591f30c:
		// 61 layers, hidden 7168, 128 heads with multi-head latent attention
		// (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128),
		// vocab 129280 untied; the first 3 layers dense (d_ff 18432), then 256
		// routed experts of width 2048, 8 per token, and 1 shared expert.
		// The 671B excludes the 14B multi-token-prediction module of the checkpoint.
		// max_position_embeddings 163840: MaxText configs/models/deepseek3-671b.yml 50 and
		// MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c deepseek3_671b_dict ("from" DeepSeek-V3's config.json).
		Name: "deepseek3-671b", Layers: 61, DModel: 7168, Heads: 128, HeadDim: 128, DFF: 18432, Vocab: 129280, SeqLen: 4096, MaxPositions: 163840, GatedMLP: true,
		Experts: 256, ExpertsPerToken: 8, SharedExperts: 1, ExpertDFF: 2048, FirstDenseLayers: 3,
		QLoRARank: 1536, KVLoRARank: 512, QKRopeHeadDim: 64, VHeadDim: 128,
		Published: 671e9, PublishedActive: 37e9, Source: "DeepSeek-V3 Technical Report, abstract (671B total, 37B activated per token)",
		HFModel: "deepseek-ai/DeepSeek-V3-Base",
		// The released checkpoints store their weights in fp8 (e4m3, one
		// scale per 128×128 block), config.json's quantization_config
		// saying so, which vLLM reads from the checkpoint. README_WEIGHTS.md
		// read at 9b4e9788 (2025-08-28), unchanged since the release commit
		// 4c2fdb8f (2024-12-26).
		HFDtype: "fp8", HFDtypeSource: "deepseek-ai/DeepSeek-V3 README_WEIGHTS.md @9b4e9788, FP8 Weight Documentation: quantization_config quant_method fp8, fmt e4m3, 128x128 blocks",
	},
	{
		// Qwen Team 2025, "Qwen3 Technical Report" (arXiv 2505.09388) Table 1 and the released
		// config.json, as MaxText's configs/models/qwen3-32b.yml @e591f30c: 64 layers,
		// hidden 5120, 64 query and 8 KV heads of 128, feedforward 25600 (SwiGLU), vocab
		// 151936 untied; its QK-norm scales (2 x 128 a layer) are not counted. Its
		// native context, 32,768 tokens (the model card), is the sequence it is
		// described at. Its config.json's max_position_embeddings is 40960
		// (MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c qwen3_32b_config).
		Name: "qwen3-32b", Layers: 64, DModel: 5120, Heads: 64, KVHeads: 8, HeadDim: 128, DFF: 25600, Vocab: 151936, SeqLen: 32768, MaxPositions: 40960, GatedMLP: true,
		Published: 32.8e9, Source: "Qwen/Qwen3-32B model card (32.8B parameters, 31.2B non-embedding)",
		HFModel: "Qwen/Qwen3-32B",
	},
	{
		// Qwen Team 2025, "Qwen3 Technical Report" (arXiv 2505.09388) Table 2 and the released
		// config.json, as MaxText's configs/models/qwen3-235b-a22b.yml @e591f30c: 94 layers,
		// hidden 4096, 64 query and 4 KV heads of 128, vocab 151936 untied, every layer
		// MoE with 128 experts of width 1536, 8 per token, no shared expert. Its context:
		// "32,768 natively" (the Qwen3-235B-A22B model card, as the FP8 repository's README
		// copy in akash-network/awesome-akash Qwen3-235B-A22B-FP8/README.md gives it); its
		// config.json's max_position_embeddings, what vLLM caps max_model_len at, is 40960
		// (a verbatim copy of Qwen/Qwen3-235B-A22B's config.json, transformers 4.51.0,
		// rope_theta 1e6, in a public litellm_config.py's HARD_CODED_CONFIGS, read
		// 2026-12-07; every original Qwen3 checkpoint in MaxText's
		// checkpoint_conversion/utils/hf_model_configs.py @e591f30c has 40960 too, and
		// MaxText's own config is the 2507 Thinking model's).
		Name: "qwen3-235b-a22b", Layers: 94, DModel: 4096, Heads: 64, KVHeads: 4, HeadDim: 128, DFF: 1536, Vocab: 151936, SeqLen: 4096, MaxPositions: 40960, GatedMLP: true,
		Experts: 128, ExpertsPerToken: 8,
		// Qwen released no separate base checkpoint of the 235B model.
		Published: 235e9, PublishedActive: 22e9, Source: "Qwen/Qwen3-235B-A22B model card (235B total, 22B activated)",
		HFModel: "Qwen/Qwen3-235B-A22B",
	},
	{
		// Qwen Team 2025, Qwen3-Coder-480B-A35B-Instruct's config.json, as MaxText's
		// configs/models/qwen3-480b-a35b.yml @e591f30c: 62 layers, hidden 6144, 96 query
		// and 8 KV heads of 128, vocab 151936 untied, every layer MoE with 160 experts of
		// width 2560, 8 per token, no shared expert. Its context is 262,144 tokens
		// (config.json max_position_embeddings; "256K natively" on the model card),
		// which the vLLM recipes serve from: the sequence it is described at
		// (MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c qwen3_coder_480b_a35b_config: 262144).
		Name: "qwen3-coder-480b-a35b", Layers: 62, DModel: 6144, Heads: 96, KVHeads: 8, HeadDim: 128, DFF: 2560, Vocab: 151936, SeqLen: 262144, MaxPositions: 262144, GatedMLP: true,
		Experts: 160, ExpertsPerToken: 8,
		Published: 480e9, PublishedActive: 35e9, Source: "Qwen/Qwen3-Coder-480B-A35B-Instruct model card (480B total, 35B activated)",
		HFModel: "Qwen/Qwen3-Coder-480B-A35B-Instruct",
	},
	{
		// Qwen3.5-397B-A17B, as MaxText's configs/models/qwen3.5-397b-a17b.yml @e591f30c
		// (AI-Hypercomputer/maxtext) gives its decoder: 60 layers, hidden 4096, 32 query and
		// 2 KV heads of 256, vocab 248320 untied; 512 experts of width 1024, 10 per token, one
		// shared expert of 1024, every layer MoE; Gated DeltaNet linear attention in three of
		// every four layers (inhomogeneous_layer_cycle_interval 4) with 16 key heads and 64
		// value heads of 128 and a 4-tap convolution; NVIDIA/Megatron-LM
		// examples/mimo/configs/qwen35_vlm.py @1e38b879 ("all values match the HuggingFace
		// text_config") the same, and the softmax layers' output gate (attention_output_gate).
		// Counted so, 396.35B parameters and 17.35B active; the shared expert's scalar gate
		// and the query and key norms are not counted (253,440 parameters). max_position_embeddings
		// 262144: MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c qwen3_5_397b_a17b_dict's text_config.
		// MaxText scans and rematerialises its layers four at a time (Qwen3_5ScannableBlock), and
		// its layers tag no decoder_layer_input (models/qwen3_5.py @e591f30c; model/block.go).
		Name: "qwen3.5-397b-a17b", Layers: 60, DModel: 4096, Heads: 32, KVHeads: 2, HeadDim: 256, DFF: 1024, Vocab: 248320, SeqLen: 262144, MaxPositions: 262144, GatedMLP: true,
		Experts: 512, ExpertsPerToken: 10, SharedExperts: 1,
		FullAttentionEvery: 4, LinearKeyHeads: 16, LinearKeyHeadDim: 128, LinearValueHeads: 64, LinearValueHeadDim: 128, LinearConvKernel: 4,
		AttentionOutputGate: true, ScanBlock: 4, UntaggedLayerInput: true,
		Published: 397e9, PublishedActive: 17e9, Source: "Qwen/Qwen3.5-397B-A17B model card (397B total, 17B activated)",
		HFModel: "Qwen/Qwen3.5-397B-A17B",
	},
	{
		// Mistral AI 2024, Mixtral 8x22B release and config.json, as MaxText's
		// configs/models/mixtral-8x22b.yml @e591f30c: 56 layers, hidden 6144,
		// 48 query and 8 KV heads of 128, vocab 32768 untied, 8 experts of
		// width 16384, 2 per token. max_position_embeddings 65536: MaxText src/maxtext/checkpoint_conversion/utils/hf_model_configs.py @e591f30c
		// mixtral_8x22b_dict, "from" Mixtral-8x22B-Instruct-v0.1's config.json.
		Name: "mixtral-8x22b", Layers: 56, DModel: 6144, Heads: 48, KVHeads: 8, DFF: 16384, Vocab: 32768, SeqLen: 4096, MaxPositions: 65536, GatedMLP: true,
		Experts: 8, ExpertsPerToken: 2,
		Published: 141e9, PublishedActive: 39e9, Source: "mistral.ai/news/mixtral-8x22b (39B active of 141B)",
		HFModel: "mistralai/Mixtral-8x22B-v0.1",
	},
	{
		// Meta 2025, Llama 4 Maverick config.json, as MaxText's configs/models/llama4-17b-128e.yml
		// @e591f30c: 48 layers, hidden 5120, 40 query and 8 KV heads of 128, vocab 202048
		// untied; layers alternate dense (d_ff 16384) and MoE (dense first): 128 routed
		// experts of width 8192, 1 per token, and 1 shared expert. Text model only. Its
		// model card says a context of 1M tokens; its config.json's text_config has
		// max_position_embeddings 1048576 and attention_chunk_size 8192 (a copy of the
		// Maverick config.json, "Llama4 Maverick config but with only 2 layers", transformers
		// 4.51.0.dev0, whose every other text_config value is this entry's: NVIDIA/TensorRT-LLM
		// tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py @0074a2241768,
		// LLAMA_4_MAVERICK_TWO_LAYER_CONFIG; the Hugging Face repository itself was not
		// readable here). Its RoPE layers, 3 in 4, attend within aligned chunks of 8192 (HF
		// and MaxText alike, model/chunk.go), which training costs. tpu-inference's JAX
		// Llama 4 does the opposite: it passes attention_chunk_size 8192 to the layers
		// without RoPE, 1 in 4 (models/jax/llama4.py @b8692ff0, 518 and 579), as the
		// ragged paged attention kernel's sliding_window (layers/common/attention_interface.py
		// 447), and its RoPE layers attend over the whole context; serving models neither.
		// MaxText scans and rematerialises its layers four at a time (llama4-17b-128e.yml
		// inhomogeneous_layer_cycle_interval 4; model/block.go).
		Name: "llama4-maverick", Layers: 48, DModel: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, DFF: 16384, Vocab: 202048, SeqLen: 8192, MaxPositions: 1048576, AttentionChunk: 8192, GatedMLP: true,
		Experts: 128, ExpertsPerToken: 1, SharedExperts: 1, ExpertDFF: 8192, MoEEvery: 2, ScanBlock: 4,
		Published: 400e9, PublishedActive: 17e9, Source: "meta-llama/Llama-4-Maverick-17B-128E model card (17B active, 400B total)",
		HFModel: "meta-llama/Llama-4-Maverick-17B-128E",
	},
}

// Lookup finds a catalog model by name, ignoring case, dashes, dots and
// underscores ("Llama-3-8B" = "llama3-8b").
func Lookup(name string) (Spec, bool) {
	key := normalize(name)
	for _, s := range catalog {
		if normalize(s.Name) == key {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the catalog's model names, sorted.
func Names() []string {
	var out []string
	for _, s := range catalog {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// Catalog returns the built-in models.
func Catalog() []Spec { return append([]Spec(nil), catalog[:]...) }

// separators are what a model name may spell in any way: normalize drops
// them (one Replacer, safe for concurrent use, built once: Lookup is on
// the planner's per-search path).
var separators = strings.NewReplacer("-", "", "_", "", ".", "", " ", "")

func normalize(s string) string {
	return strings.ToLower(separators.Replace(strings.TrimSpace(s)))
}
