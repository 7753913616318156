package inference

import (
	"strings"
	"testing"

	"shardlab/model"
)

// TestHosts: the hosts a layout's devices span, by hand from the VMs the
// hardware catalog gives: a tpu7x VM holds 4 chips of 2 JAX devices (8
// devices), so tpu7x-16's 16 devices are 2 hosts; a v6e VM of a
// multi-host slice holds 4 chips (ct6e-standard-4t), so v6e-16 is 4
// hosts and v6e-64 16, whether TP or DP spans them, while v6e-8 also
// comes as one 8-chip ct6e-standard-8t that holds all 8 devices; v5e's
// 2x4 is one ct5lp-hightpu-8t.
func TestHosts(t *testing.T) {
	for _, c := range []struct {
		tpu    string
		tp, dp int
		want   int
	}{
		{"tpu7x-8", 8, 1, 1},
		{"tpu7x-8", 2, 4, 1},
		{"tpu7x-16", 16, 1, 2},
		{"tpu7x-16", 8, 2, 2},
		{"v6e-4", 4, 1, 1},
		{"v6e-8", 8, 1, 1},
		{"v6e-8", 4, 1, 1},
		{"v6e-16", 4, 4, 4},
		{"v6e-16", 16, 1, 4},
		{"v6e-64", 64, 1, 16},
		{"v5litepod-8", 8, 1, 1},
	} {
		r := request(t)
		r.Slice = slice(t, c.tpu)
		if got := r.Hosts(Layout{TP: c.tp, DP: c.dp}); got != c.want {
			t.Errorf("%s TP %d × DP %d: Hosts = %d, want %d", c.tpu, c.tp, c.dp, got, c.want)
		}
	}
}

// TestMultiHostWarning: a plan whose devices span hosts says, beside the
// untested warning, that its vllm serve line needs a Ray cluster over the
// slice's hosts (tpu-inference's scripts/multihost/run_cluster.sh) with
// TPU_MULTIHOST_BACKEND=ray, and, with replicas, TPU_MULTIPROCESS_DP=0
// (tpu-inference @b8692ff0: platforms/tpu_platform.py 394-418 and
// 270-298, worker/tpu_worker.py 270-293); a one-host plan says neither.
func TestMultiHostWarning(t *testing.T) {
	for _, c := range []struct {
		tpu        string
		tp         int
		hosts      int
		replicated bool
	}{
		{"v6e-4", 0, 1, false},
		{"v6e-16", 16, 4, false}, // TP spans the hosts
		{"v6e-16", 4, 4, true},   // each replica on one host, DP across them
	} {
		r := request(t)
		r.Model, _ = model.Lookup("llama3-8b")
		r.Slice, r.TP = slice(t, c.tpu), c.tp
		_, p := searched(t, r)
		all := strings.Join(p.Warnings, "\n")
		if got := r.Hosts(p.Best); got != c.hosts || (p.Best.DP > 1) != c.replicated {
			t.Fatalf("%s TP %d: chose TP %d × DP %d over %d hosts, want %d hosts, replicas %v", c.tpu, c.tp, p.Best.TP, p.Best.DP, got, c.hosts, c.replicated)
		}
		multi := c.hosts > 1
		for _, want := range []string{"devices span", "Ray cluster over the slice's", "run_cluster.sh", "TPU_MULTIHOST_BACKEND=ray"} {
			if strings.Contains(all, want) != multi {
				t.Errorf("%s TP %d: warnings %q: %q there %v, want %v", c.tpu, c.tp, all, want, !multi, multi)
			}
		}
		if strings.Contains(all, "TPU_MULTIPROCESS_DP=0") != (multi && c.replicated) {
			t.Errorf("%s TP %d × DP %d: warnings %q: TPU_MULTIPROCESS_DP=0 named %v, want %v", c.tpu, p.Best.TP, p.Best.DP, all, !(multi && c.replicated), multi && c.replicated)
		}
	}
}
