package export_test

import (
	"fmt"

	"shardlab/export"
	"shardlab/plan"
)

// On TPU7x each chip is two JAX devices: 64 chips of fsdp are 128 devices
// in MaxText's mesh, and 256 sequences are 2 per device.
func ExampleMaxText() {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Remat = "llama3-8b", "tpu7x-128", "fsdp=128", "256", "full"
	r, _ := plan.ParseRequest(o)
	p, _ := plan.Search(r)
	cfg, err := export.MaxText(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range []string{"ici_fsdp_parallelism", "per_device_batch_size", "remat_policy"} {
		v, _ := cfg.Get(k)
		fmt.Printf("%s: %v\n", k, v)
	}
	// Output:
	// ici_fsdp_parallelism: 128
	// per_device_batch_size: 2
	// remat_policy: full
}

func ExampleXPK() {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch = "llama3-70b", "tpu7x-256", 2, "data=2(dcn),fsdp=256", "512"
	r, _ := plan.ParseRequest(o)
	p, _ := plan.Search(r)
	args, err := export.XPKArgs(p, export.XPKOptions{Cluster: "ironwood", Workload: "llama-70b", BaseDockerImage: "maxtext_base_image", Capacity: export.CapacitySpot, MaxRestarts: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(args[:13])
	// Output:
	// [--cluster ironwood --workload llama-70b --base-docker-image maxtext_base_image --tpu-type tpu7x-4x4x8 --num-slices 2 --spot --max-restarts 2]
}

// A reservation is named as Compute Engine names resources; xpk also
// takes another project's by its path.
func ExampleValidReservation() {
	for _, r := range []string{"res-1", "projects/my-project/reservations/res-1", "r;id"} {
		fmt.Println(export.ValidReservation("--reservation", r))
	}
	// Output:
	// <nil>
	// <nil>
	// export: xpk: --reservation "r;id"; want a Compute Engine resource name: at most 63 lower-case letters, digits and hyphens, starting with a letter and not ending with a hyphen
}

// An image is named by Docker's image reference grammar: a repository
// path in lower case, a tag, a digest.
func ExampleValidImage() {
	for _, img := range []string{"maxtext_base_image", "gcr.io/my-project/maxtext:2026-08-22", "gcr.io/my-project/MaxText"} {
		fmt.Println(export.ValidImage("--docker-image", img))
	}
	// Output:
	// <nil>
	// <nil>
	// export: xpk: --docker-image "gcr.io/my-project/MaxText"; want the repository path in lower-case (Docker's image reference grammar)
}

// A front end spells shardlab's commands (here as the command line does,
// with the job's option the plan was given besides the model and TPU);
// the steps give each command as arguments and as a shell line. This plan
// puts the step at XLA's limit, so its check writes no calibration
// (AtLimitNote): a plan below it ends the check with --write-calibration.
func ExampleVerification_Steps() {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Seq = "llama3-8b", "v5p-8", 4096
	r, _ := plan.ParseRequest(o)
	p, _ := plan.Search(r)
	s := export.Verify(p, "").Steps(export.Commands{Spell: plan.Option.Flag, Job: []string{"--seq", "4096"}})
	for _, c := range s.Commands {
		fmt.Printf("%s: %d arguments\n  %s\n", c.Step, len(c.Args), c.Line)
	}
	// Output:
	// export: 15 arguments
	//   shardlab export maxtext --model llama3-8b --tpu v5p-8 --seq 4096 --mesh 'fsdp=4' --global-batch 20 --remat minimal > shardlab-llama3-8b.yml
	// compile: 7 arguments
	//   python3 -m maxtext.trainers.pre_train.train_compile shardlab-llama3-8b.yml run_name=shardlab-llama3-8b compile_topology=v5p-8 compile_topology_num_slices=1 2>&1 | tee compile.log
	// check: 16 arguments
	//   shardlab check --compile-log compile.log --model llama3-8b --tpu v5p-8 --seq 4096 --mesh 'fsdp=4' --global-batch 20 --remat minimal
}
