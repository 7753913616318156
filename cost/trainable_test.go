package cost

import (
	"errors"
	"strings"
	"testing"

	"shardlab/model"
)

// TestCheckTrainableRefusesWindows: Gemma 4's sliding-window layers (and
// its 26B's shared MLP of its own width) are modelled for serving only; a
// training estimate refuses them, naming the model and the field, rather
// than costing them as global layers of one shape.
func TestCheckTrainableRefusesWindows(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"gemma4-31b", "gemma4-31b (sliding_window 1024)"},
		{"gemma4-26b-a4b", "gemma4-26b-a4b (sliding_window 1024)"},
	} {
		s, ok := model.Lookup(c.name)
		if !ok {
			t.Fatalf("%s not in the catalog", c.name)
		}
		err := CheckTrainable(s)
		if !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckTrainable(%s) = %v, want an ErrJob naming %q", c.name, err, c.want)
		}
	}
	s, _ := model.Lookup("gemma4-26b-a4b")
	s.SlidingWindow, s.GlobalAttentionEvery, s.GlobalKVHeads, s.GlobalHeadDim, s.GlobalKeyAsValue = 0, 0, 0, 0, false
	if err := CheckTrainable(s); !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), "shared_expert_d_ff 2112") {
		t.Errorf("CheckTrainable(shared MLP of 2112 beside experts of 704) = %v, want an ErrJob naming shared_expert_d_ff", err)
	}
	llama, _ := model.Lookup("llama3-8b")
	if err := CheckTrainable(llama); err != nil {
		t.Errorf("CheckTrainable(llama3-8b) = %v, want nil", err)
	}
}
