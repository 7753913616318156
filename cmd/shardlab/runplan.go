package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/schema"
	"shardlab/unit"
)

// The emulator trains small models on a few cores. It takes a plan's
// sequence length only up to these, since its attention grows with the
// square of the sequence; past them it keeps --seq and says so.
const (
	maxRunSeq     = 1 << 16 // --seq, as emu.Config bounds it
	maxPlanSeq    = 1024
	maxPlanTokens = 1 << 16 // sequences x tokens per step
)

// planJob is what run takes from a plan besides its layout.
type planJob struct {
	batch, micro, seq, chunks int
	schedule                  string
}

// meshFromPlan reads the layout and topology of what 'shardlab plan --json'
// prints: one plan object, or an object whose plans (without model or TPU
// flags) index picks one from; a schema other than schema.Version is
// refused, a missing one (a file written by hand) taken as it.
func meshFromPlan(path string, index int, indexSet bool) (mesh.Mesh, planJob, error) {
	var pj planJob
	p, err := readPlanJSON(path, index, indexSet)
	if err != nil {
		return mesh.Mesh{}, pj, err
	}
	if err := checkPlanJob(path, p); err != nil {
		return mesh.Mesh{}, pj, err
	}
	s, err := hw.ParseAcceleratorType(p.Accelerator)
	if err != nil {
		return mesh.Mesh{}, pj, fmt.Errorf("--plan %s: %w", path, err)
	}
	if p.Topology != "" {
		if s, err = hw.ParseTopology(s.Chip, p.Topology); err != nil {
			return mesh.Mesh{}, pj, fmt.Errorf("--plan %s: %w", path, err)
		}
	}
	ms, err := hw.NewMultislice(s, p.Slices, 0)
	if err != nil {
		return mesh.Mesh{}, pj, fmt.Errorf("--plan %s: %w", path, err)
	}
	if ms.Chips() > maxRunChips {
		return mesh.Mesh{}, pj, bad("--plan %s: %d chips is more virtual chips than one process runs (at most %d)", path, ms.Chips(), maxRunChips)
	}
	m, err := mesh.New(ms, p.Layout.Axes...)
	if err != nil {
		return mesh.Mesh{}, pj, fmt.Errorf("--plan %s: %w", path, err)
	}
	return m, planJob{batch: p.GlobalBatch, micro: p.MicroBatches, seq: p.Seq, schedule: p.Schedule, chunks: p.Chunks}, nil
}

// readPlanJSON reads the plan object of the file at path: the file's
// one plan, or its plans' index'th.
func readPlanJSON(path string, index int, indexSet bool) (plan.JSON, error) {
	var p plan.JSON
	data, err := readFile("--plan", path, maxPlanBytes)
	if err != nil {
		return p, err
	}
	notPlan := bad("--plan %s: not what 'shardlab plan --json' prints (want a plan object with accelerator_type, slices and layout.axes, or an object of plans)", path)
	var doc struct {
		Schema *string           `json:"schema"`
		Plans  []json.RawMessage `json:"plans"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return p, notPlan
	}
	if doc.Schema != nil && *doc.Schema != schema.Version {
		return p, bad("--plan %s: schema %s, want %s (what this shardlab's plan --json prints)", path, strconv.QuoteToASCII(*doc.Schema), schema.Version)
	}
	if all := doc.Plans; all != nil {
		switch {
		case len(all) == 0:
			return p, notPlan
		case len(all) > 1 && !indexSet:
			return p, bad("--plan %s holds %d plans (what 'shardlab plan --json' prints without model or TPU flags); pick one with --plan-index 0 to %d", path, len(all), len(all)-1)
		case index >= len(all):
			return p, bad("--plan-index %d, want 0 to %d: %s holds %d plans", index, len(all)-1, path, len(all))
		}
		data = all[index]
	} else if indexSet && index != 0 {
		return p, bad("--plan-index %d, want 0: %s holds one plan", index, path)
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Accelerator == "" || len(p.Layout.Axes) == 0 {
		if me := (*mesh.Error)(nil); errors.As(err, &me) {
			return p, fmt.Errorf("--plan %s: %w", path, err) // an axis name it does not know
		}
		return p, notPlan
	}
	return p, nil
}

// checkPlanJob refuses a plan whose job run cannot train: its slices,
// batch, micro-batches, sequence, schedule and chunks.
func checkPlanJob(path string, p plan.JSON) error {
	field := func(name string, v int, want string) error {
		return bad("--plan %s: %s = %d, want %s", path, name, v, want)
	}
	switch {
	case p.Slices < 1 || p.Slices > 4096:
		return field("slices", p.Slices, "1 to 4096")
	case p.GlobalBatch < 1 || p.GlobalBatch > 1<<20:
		return field("global_batch_sequences", p.GlobalBatch, "1 to 1048576")
	case p.MicroBatches < 1 || p.MicroBatches > 4096:
		return field("micro_batches", p.MicroBatches, "1 to 4096")
	case p.Seq < 1:
		return field("seq_len", p.Seq, "a positive number of tokens")
	}
	if _, err := schedule.ParseKind(p.Schedule); p.Schedule != "" && err != nil {
		return bad("--plan %s: schedule %q, want gpipe, 1f1b, interleaved or circular", path, p.Schedule)
	}
	if p.Chunks < 0 || p.Chunks > plan.MaxChunks {
		return field("chunks_per_device", p.Chunks, fmt.Sprintf("0 to %d", plan.MaxChunks))
	}
	return nil
}

// maxRunChips bounds the virtual chips of one run.
const maxRunChips = 4096

// apply takes the plan's batch, micro-batches, schedule (with its chunks)
// and sequence length
// for the flags the command line did not set.
func (pj planJob) apply(f *runFlags, set map[string]bool, stderr io.Writer) {
	if !set["batch"] {
		*f.batch = pj.batch
	}
	if !set["micro-batches"] {
		*f.micro = pj.micro
	}
	if !set["schedule"] && pj.schedule != "" { // "": no pipeline, the flag's default
		*f.sched = pj.schedule
		if !set["chunks"] {
			*f.chunks = pj.chunks
		}
	}
	if set["seq"] {
		return
	}
	if pj.seq <= maxPlanSeq && *f.batch*pj.seq <= maxPlanTokens {
		*f.seq = pj.seq
		return
	}
	warn(stderr, "run", "the plan's %d sequences of %d tokens are more than the emulator trains per step (sequences of at most %d tokens, %d tokens a step); training %d sequences of %d tokens (set --seq to choose)",
		*f.batch, pj.seq, maxPlanSeq, maxPlanTokens, *f.batch, *f.seq)
}

// maxRunLayers bounds --layers.
const maxRunLayers = 1024

// splitLayers, when the command line does not set --layers, makes it the
// fewest layers from its default up that the plan's pipeline x chunks
// split (the schedule and chunks apply has settled, as pipelineSchedule
// reads them), and says so, as apply says of the sequence length. An
// explicit --layers is left for pipelineSchedule to refuse by name.
func (f *runFlags) splitLayers(m mesh.Mesh, set map[string]bool, stderr io.Writer) error {
	k, err := schedule.ParseKind(*f.sched)
	if set["layers"] || err != nil {
		return nil
	}
	p, v := m.Size(mesh.Pipeline), chunksOf(k, *f.chunks)
	n := p * v
	if *f.layers%n == 0 {
		return nil
	}
	split := fmt.Sprintf("the plan's %s x %s", axisFactor(mesh.Pipeline, p), unit.Plural(v, "chunk"))
	if n > maxRunLayers {
		return bad("run: --plan %s: %s split the layers %d ways, more than the %d layers the emulator trains", *f.planPath, split, n, maxRunLayers)
	}
	def := *f.layers
	*f.layers = (def + n - 1) / n * n
	warn(stderr, "run", "%s split the layers %d ways; training %d layers, not --layers' default %d (set --layers to a multiple of %d to choose)",
		split, n, *f.layers, def, n)
	return nil
}

// meshOn lays spec out on slices of --tpu: an accelerator type, or a
// generation for one of its usual VMs (hw.Chip.HostSlice).
func meshOn(tpu string, slices int, spec string) (mesh.Mesh, error) {
	chip, slice, err := parseTPU("--tpu", tpu)
	if err != nil {
		return mesh.Mesh{}, err
	}
	if slice == nil {
		s, err := hostSlice(chip)
		if err != nil {
			return mesh.Mesh{}, err
		}
		slice = &s
	}
	ms, err := hw.NewMultislice(*slice, slices, 0)
	if err != nil {
		return mesh.Mesh{}, err
	}
	if ms.Chips() > maxRunChips {
		return mesh.Mesh{}, bad("run: %s is %d chips, more virtual chips than one process runs (at most %d)", ms, ms.Chips(), maxRunChips)
	}
	m, err := mesh.Parse(ms, spec)
	if err != nil {
		return m, bad("run: --mesh %s on --slices %d of --tpu %s: %v", spec, slices, tpu, err)
	}
	return m, nil
}
