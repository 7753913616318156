package emu

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestReport: the report's model section carries model.Spec's keys (one
// field list, Config's), its params and hash count the final parameters,
// and WriteText refuses a report without its run instead of panicking.
func TestReport(t *testing.T) {
	c := Config{Layers: 1, DModel: 16, Heads: 2, KVHeads: 1, DFF: 32, Vocab: 32, Seq: 8, Tied: true}
	tc := TrainConfig{Model: c, Mesh: testMesh(t, "v5litepod-4", 1, "data=2,fsdp=2"), GlobalBatch: 4, MicroBatches: 1, Steps: 2, Seed: 1, LR: 1e-3, Data: &Synthetic{V: 32, Seed: 1}}
	res, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReport(tc, res, []float64{2, 1})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Model   map[string]any `json:"model"`
		Params  int            `json:"params"`
		WallS   float64        `json:"measured_step_time_s"`
		Devices int            `json:"chips"`
	}
	json.Unmarshal(b, &back)
	params := 0
	for _, x := range res.Final.Tensors() {
		params += len(x)
	}
	// meanTail of [2 1] is the mean of its last half, [1]
	if back.Model["seq_len"] != 8.0 || back.Model["tied_embeddings"] != true || back.Model["seq"] != nil || back.Params != params || back.WallS != 1 || back.Devices != 4 {
		t.Errorf("report JSON %s; want model seq_len 8, tied_embeddings true, %d params, measured 1 s, 4 chips", b, params)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "1 layer, d_model 16, 2 heads (1 KV), d_ff 32, vocab 32, seq 8") {
		t.Errorf("WriteText: %v\n%s", err, text.String())
	}
	var decoded Report
	json.Unmarshal(b, &decoded)
	if err := decoded.WriteText(&text); !errors.Is(err, ErrInvalid) {
		t.Errorf("WriteText of a decoded report: %v, want ErrInvalid", err)
	}
}
