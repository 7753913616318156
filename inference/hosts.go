package inference

import (
	"fmt"

	"shardlab/hw"
	"shardlab/unit"
)

// How tpu-inference serves a layout whose devices span hosts, read at
// vllm-project/tpu-inference @b8692ff01fa191343836996c27a39dc95f008b88:
//
//	[ti-mh]    tpu_inference/envs.py 230-231: TPU_MULTIHOST_BACKEND, env_with_choices("", ["ray"]);
//	           platforms/tpu_platform.py 394-418 (check_and_update_config): unset, the engine
//	           runs the uniproc executor on the host it starts on (the multiproc one with PP > 1);
//	           "ray" alone selects RayDistributedExecutor(V2). executors/ray_distributed_executor.py
//	           185-188: that executor asks for one placement-group bundle of every TPU host in the
//	           Ray cluster, all of each host's chips; 197-217: the host it is started on must be one
//	           of them. scripts/multihost/run_cluster.sh 22-41, 109-114: the Ray cluster is started
//	           first, `ray start --block --head --port=6379` on one host and `--address=HEAD:6379`
//	           on every other, each with TPU_MULTIHOST_BACKEND=ray; .buildkite/scripts/
//	           run_multihost.sh 353-414, 446-449 starts it so and runs vllm serve on the head host.
//	[ti-mpdp]  platforms/tpu_platform.py 270-298: under `vllm serve` with --data-parallel-size > 1
//	           and no attention DP, TPU_MULTIPROCESS_DP (envs.py 239-240) resolves to 1: one engine
//	           process a replica, each started where vllm serve runs; worker/tpu_worker.py 270-293
//	           (_setup_dp_chip_isolation) pins replica k to chips [k·c, (k+1)·c) of that host and
//	           refuses one past its chips ("the host only has N chips"). TPU_MULTIPROCESS_DP=0
//	           runs the replicas in one engine instead, data parallelism an axis of its mesh and
//	           vLLM's own DP size set to 1 (layers/common/sharding.py 219-220, 307-312).
//	           Under Ray each of the multi-process engines would ask for every TPU host ([ti-mh]).

// Hosts is the number of hosts (VMs) that l's devices span on r's slice:
// 1 where they fit one VM, the larger one-host VM of the chip included
// (hw.Chip.SingleHost) where the slice fits it. Above 1, vllm serve
// starts only on a Ray cluster over the slice's hosts [ti-mh].
func (r Request) Hosts(l Layout) int {
	host, _ := r.host(l)
	return ceilDiv(l.Devices(), host.Chips*r.Slice.Chip.JAXDevicesPerChip)
}

// host is the VM that l's devices are planned on: the slice's, or the
// chip's larger single-host VM (single true) where the slice fits that
// VM and the slice's own would not hold l (v6e-8's ct6e-standard-8t,
// which training slices are not made of).
func (r Request) host(l Layout) (h hw.Host, single bool) {
	c, h := r.Slice.Chip, r.Slice.Host()
	if s := c.SingleHost; s.Chips > h.Chips && r.Slice.Chips() <= s.Chips && l.Devices() > h.Chips*c.JAXDevicesPerChip {
		return s, true
	}
	return h, false
}

// hostNotes are what r's plan says of the hosts b's devices span: a
// reason where they fit one host (the larger VM named where it is the
// one), else warnings that multi-host serving is untested and how its
// line starts [ti-mh].
func hostNotes(r Request, b Layout) (reasons, warnings []string) {
	host, single := r.host(b)
	if single {
		reasons = append(reasons, fmt.Sprintf("one host: %d devices fit one %s VM (%s)", b.Devices(), host.MachineType, unit.Plural(host.Chips, "chip")))
	}
	hosts := r.Hosts(b)
	if hosts == 1 {
		tested := "single-host tensor and data parallelism: tested by tpu-inference (docs/includes/parallelism.md)"
		if r.Slice.Chip.Generation == hw.TPU7x {
			tested += "; its daily benchmarks run TP 2 on one TPU7x chip and TP 8 on a 4-chip VM (.buildkite/benchmark/cases/daily)" // [ti-bench]
		}
		return append(reasons, tested), nil
	}
	warnings = append(warnings,
		fmt.Sprintf("%d devices span %d hosts: tpu-inference lists multi-host TP and DP as untested, only multi-host PP as passing (docs/includes/parallelism.md)", b.Devices(), hosts),
		multiHostWarning(r, b))
	return reasons, warnings
}

// multiHostWarning says how the vllm serve line of b, whose devices span
// hosts, starts [ti-mh], and, with replicas, why it runs them in one
// engine [ti-mpdp].
func multiHostWarning(r Request, b Layout) string {
	s := fmt.Sprintf("multi-host: the vllm serve line starts only on a Ray cluster over the slice's %d hosts, started first (tpu-inference's scripts/multihost/run_cluster.sh: ray start --head on one host, ray start --address to it on each other), and runs on the head host; it sets TPU_MULTIHOST_BACKEND=ray, without which tpu-inference runs the engine on the one host it starts on (platforms/tpu_platform.py)",
		r.Slice.Hosts())
	if b.DP > 1 {
		s += fmt.Sprintf(", and TPU_MULTIPROCESS_DP=0, which runs the %d replicas in one engine, data parallelism an axis of its mesh (layers/common/sharding.py): vllm serve's default, an engine process a replica, places every replica on the chips of the host it starts on and refuses one past them (worker/tpu_worker.py)", b.DP)
	}
	return s
}
