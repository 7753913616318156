package plan_test

import (
	"errors"
	"fmt"
	"strings"

	"shardlab/plan"
)

// flag spells an option as the CLI's flag does.
func flag(o plan.Option) string { return "--" + strings.ReplaceAll(string(o), "_", "-") }

func ExampleParseRequest() {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices = "llama3-70b", "v5p-128", 2
	o.MaxGlobalBatch = "2Mitok"
	o.HBMHeadroom = 0 // keep no HBM free
	r, err := plan.ParseRequest(o)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Model.Name, "on", r.Multislice)
	fmt.Println(r.MaxGlobalBatch, "sequences of", r.Seq, "tokens at most, headroom", r.HBMHeadroom)

	o.GlobalBatch = "3Mtok"
	_, err = plan.ParseRequest(o)
	fmt.Println(err)
	var oe *plan.OptionError
	if errors.As(err, &oe) {
		fmt.Println(oe.Option, "|", oe.Phrase(flag))
	}
	// Output:
	// llama3-70b on 2 slices of v5p-128 (4x4x4, 64 chips each; 128 chips in all)
	// 256 sequences of 8192 tokens at most, headroom 0
	// plan: global batch "3Mtok": 3000000 tokens is not a whole number of 8192-token sequences
	// global batch | --global-batch "3Mtok": 3000000 tokens is not a whole number of 8192-token sequences
}

func ExampleParseBatch() {
	for _, s := range []string{"512", "4Mitok", "4Mtok"} {
		n, err := plan.ParseBatch(s, 8192, false)
		fmt.Println(s, n, err)
	}
	_, err := plan.ParseBatch("4Mtok", 8192, true)
	fmt.Println(err)
	// Output:
	// 512 512 <nil>
	// 4Mitok 512 <nil>
	// 4Mtok 488 <nil>
	// plan: batch "4Mtok": 4000000 tokens is not a whole number of 8192-token sequences
}

func ExampleOptions_Examples() {
	for _, o := range plan.DefaultOptions().Examples() {
		r, err := plan.ParseRequest(o)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Model.Name, "on", r.Multislice)
	}
	// Output:
	// llama3-8b on tpu7x-8 (2x2x1, 4 chips)
	// llama3-70b on 2 slices of tpu7x-128 (4x4x4, 64 chips each; 128 chips in all)
}

func ExampleNote_Phrase() {
	n := plan.Note{Option: plan.OptionEfficiency, Text: "compute assumes 60% of the MXU-limited rate ({efficiency})"}
	fmt.Println(n)
	fmt.Println(n.Phrase(flag))
	// Output:
	// compute assumes 60% of the MXU-limited rate (efficiency)
	// compute assumes 60% of the MXU-limited rate (--efficiency)
}
