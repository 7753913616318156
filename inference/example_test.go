package inference_test

import (
	"fmt"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

func ExampleKVBytesPerToken() {
	m, _ := model.Lookup("llama3-70b")
	for _, kv := range []inference.Dtype{inference.BF16, inference.FP8} {
		fmt.Printf("%s: %v per device at TP 8, %v at TP 4\n", kv,
			inference.KVBytesPerToken(m, 8, kv), inference.KVBytesPerToken(m, 4, kv))
	}
	// Output:
	// bf16: 40.0 KiB per device at TP 8, 80.0 KiB at TP 4
	// fp8: 40.0 KiB per device at TP 8, 40.0 KiB at TP 4
}

func ExampleSearch() {
	m, _ := model.Lookup("llama3-70b")
	s, _ := hw.ParseAcceleratorType("tpu7x-8")
	r, err := inference.NewRequest(inference.Request{
		Model: m, Slice: s, MaxModelLen: 8192, Concurrency: 64, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := inference.Search(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("TP %d × DP %d on %d chips, pages for %d sequences of max_model_len per replica\n", p.Best.TP, p.Best.DP, p.Best.Chips, p.Best.Memory.MaxSeqs)
	// Output:
	// TP 8 × DP 1 on 4 chips, pages for 219 sequences of max_model_len per replica
}

func ExampleActiveExperts() {
	m, _ := model.Lookup("deepseek3-671b") // 256 routed experts, 8 a token
	for _, tokens := range []int{1, 8, 64, 1024} {
		fmt.Printf("%d tokens touch %.1f experts a layer\n", tokens, inference.ActiveExperts(m, tokens))
	}
	// Output:
	// 1 tokens touch 8.0 experts a layer
	// 8 tokens touch 57.4 experts a layer
	// 64 tokens touch 222.4 experts a layer
	// 1024 tokens touch 256.0 experts a layer
}

func ExampleStepOverhead() {
	for _, e := range []inference.Engine{inference.VLLM, inference.JetStream} {
		fmt.Printf("%v: %v a step\n", e, inference.StepOverhead(e))
	}
	// Output:
	// vllm: 7.7ms a step
	// jetstream: 0s a step
}

func ExampleParseOptions() {
	o := inference.DefaultOptions()
	o.TPU, o.MaxModelLen, o.Weights = "tpu7x", 8192, "fp8" // a generation alone: one VM of it
	q, err := inference.ParseOptions(o)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, id := q.Request, q.ModelID
	fmt.Println(r.Model.Name, r.Slice.AcceleratorType(), r.Weights, r.Concurrency, id)
	o.Concurrency, o.RequestRate = 8, 2
	_, err = inference.ParseOptions(o)
	fmt.Println(err)
	// Output:
	// llama3-70b tpu7x-8 fp8 64 meta-llama/Meta-Llama-3-70B
	// inference: concurrency 8, want no request_rate beside it: give one of the two (a rate sets the concurrency)
}

func ExampleSweepConcurrency() {
	o := inference.DefaultOptions()
	o.MaxModelLen = 8192
	q, _ := inference.ParseOptions(o)
	r := q.Request
	p, _ := inference.Search(r)
	c := inference.SweepConcurrency(r, p.Layouts[:1])[0]
	first, last := c.Points[0], c.Points[len(c.Points)-1]
	fmt.Printf("TP %d × DP %d: %d to %d sequences, ITL %v to %v\n", c.TP, c.DP, first.Concurrency, last.Concurrency,
		first.ITL.Round(100_000), last.ITL.Round(100_000))
	// Output:
	// TP 8 × DP 1: 1 to 512 sequences, ITL 13.5ms to 35.4ms
}

func ExampleAtRate() {
	m, _ := model.Lookup("llama3-70b")
	s, _ := hw.ParseAcceleratorType("tpu7x-8")
	r, err := inference.NewRequest(inference.Request{
		Model: m, Slice: s, MaxModelLen: 8192, RequestRate: 2, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l := inference.AtRate(r, 8, 1)
	fmt.Printf("%.1f sequences on average at a mean step of %v; max_num_seqs %d, full on arrival %.2f%%; ITL %v; TTFT at the load %v, p99 %v\n",
		l.MeanSeqs, l.MeanStep.Round(100_000), l.SeqsEach, 100*l.FullOnArrival, l.ITL.Round(100_000), l.LoadTTFT.Mean.Round(100_000), l.LoadTTFT.P99.Round(100_000))
	// Output:
	// 35.6 sequences on average at a mean step of 17.3ms; max_num_seqs 51, full on arrival 0.88%; ITL 15.3ms; TTFT at the load 113.5ms, p99 218.6ms
}
