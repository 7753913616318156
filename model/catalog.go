package model

// catalog holds published models. Shapes come from each model's paper or
// released config; Published is the parameter count its authors give.
var catalog = [...]Spec{
	{
		// Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1:
		// n_layers 96, d_model 12288, n_heads 96, d_head 128, context 2048; d_ff = 4·d_model;
		// GPT-2 BPE vocabulary of 50257; learned positions, LayerNorm, biases.
		Name: "gpt3-175b", Layers: 96, DModel: 12288, Heads: 96, DFF: 49152, Vocab: 50257, SeqLen: 2048,
		TiedEmbeddings: true, LearnedPositions: true, Biases: true, LayerNorm: true,
		Published: 175e9, Source: "Brown et al. 2020, Table 2.1",
	},
	{
		// Touvron et al. 2023, "Llama 2", Table 1 and the released config.json
		// (hidden 4096, intermediate 11008, 32 layers, 32 heads, vocab 32000).
		Name: "llama2-7b", Layers: 32, DModel: 4096, Heads: 32, DFF: 11008, Vocab: 32000, SeqLen: 4096, GatedMLP: true,
		Published: 6_738_415_616, Source: "meta-llama/Llama-2-7b-hf safetensors metadata (6.74B)",
	},
	{
		Name: "llama2-13b", Layers: 40, DModel: 5120, Heads: 40, DFF: 13824, Vocab: 32000, SeqLen: 4096, GatedMLP: true,
		Published: 13_015_864_320, Source: "meta-llama/Llama-2-13b-hf safetensors metadata (13.0B)",
	},
	{
		// Llama 2 70B uses grouped-query attention with 8 KV heads (Touvron et al. 2023, §2.2).
		Name: "llama2-70b", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, DFF: 28672, Vocab: 32000, SeqLen: 4096, GatedMLP: true,
		Published: 68_976_648_192, Source: "meta-llama/Llama-2-70b-hf safetensors metadata (69.0B)",
	},
	{
		// Llama Team 2024, "The Llama 3 Herd of Models", Table 3: 32 layers, 4096 model
		// dim, 14336 FFN dim, 32 heads, 8 KV heads, vocabulary 128,000 (128,256 in the config).
		Name: "llama3-8b", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 8, DFF: 14336, Vocab: 128256, SeqLen: 8192, GatedMLP: true,
		Published: 8_030_261_248, Source: "Llama 3 Herd Table 3; meta-llama/Meta-Llama-3-8B safetensors metadata (8.03B)",
	},
	{
		Name: "llama3-70b", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, DFF: 28672, Vocab: 128256, SeqLen: 8192, GatedMLP: true,
		Published: 70_553_706_496, Source: "Llama 3 Herd Table 3; meta-llama/Meta-Llama-3-70B safetensors metadata (70.6B)",
	},
	{
		Name: "llama3-405b", Layers: 126, DModel: 16384, Heads: 128, KVHeads: 8, DFF: 53248, Vocab: 128256, SeqLen: 8192, GatedMLP: true,
		Published: 405e9, Source: "Llama 3 Herd Table 3 (405B)",
	},
	{
		// Gemma Team 2024, "Gemma 2", Table 1: d_model 3584, 42 layers, 16 heads,
		// 8 KV heads, head size 256, feedforward 14336 (x2 for GeGLU), vocab 256128;
		// pre- and post-norms on both sub-layers; tied embeddings.
		Name: "gemma2-9b", Layers: 42, DModel: 3584, Heads: 16, KVHeads: 8, HeadDim: 256, DFF: 14336, Vocab: 256128, SeqLen: 8192,
		GatedMLP: true, TiedEmbeddings: true, NormsPerLayer: 4,
		Published: 9_242_164_736, Source: "Gemma 2 Table 2: 917,962,752 embedding + 8,324,201,984 non-embedding",
	},
	{
		Name: "gemma2-27b", Layers: 46, DModel: 4608, Heads: 32, KVHeads: 16, HeadDim: 128, DFF: 36864, Vocab: 256128, SeqLen: 8192,
		GatedMLP: true, TiedEmbeddings: true, NormsPerLayer: 4,
		Published: 27_227_718_144, Source: "Gemma 2 Table 2: 26,047,480,320 non-embedding, plus the 256128 x 4608 embedding",
	},
	{
		// Jiang et al. 2024, "Mixtral of Experts" (arXiv 2401.04088), Table 1:
		// dim 4096, n_layers 32, head_dim 128, hidden_dim 14336, n_heads 32,
		// n_kv_heads 8, vocab_size 32000, num_experts 8, top_k_experts 2;
		// §2: "47B total parameters ... 13B active" (the model card: 46.7B
		// and 12.9B). Every layer is MoE; embeddings untied.
		Name: "mixtral-8x7b", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 8, DFF: 14336, Vocab: 32000, SeqLen: 4096, GatedMLP: true,
		Experts: 8, ExpertsPerToken: 2,
		Published: 46_700_000_000, PublishedActive: 12_900_000_000, Source: "Mixtral of Experts, Table 1 and §2 (46.7B total, 12.9B active)",
	},
}
