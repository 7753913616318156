package infeed

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"shardlab/internal/golden"
	"shardlab/unit"
)

// TestTranscripts runs the scripts of testdata/*.transcript
// (golden.Transcripts): each command runs a small host, and its output is
// the events the simulation handles, one a line: the simulated time, the
// event, the chip and worker, and the chip's state after it (examples
// done, batches in the infeed queue, in HBM and in the outfeed, and the
// MXU). A change of the simulation's behaviour shows as a diff of events;
// -update rewrites the files, and the first block's comment derives its
// trace by hand.
func TestTranscripts(t *testing.T) { golden.Transcripts(t, "run", runScript) }

// runScript runs "run key=value ..." on a small host and prints its
// events.
func runScript(t *testing.T, cmd string) string {
	c := Config{Chips: 1, VCPUs: 1, NUMANodes: 1, Placement: Local, CrossNUMA: 1, Batch: 1, ExampleCost: time.Millisecond,
		ExampleBytes: 1000, PCIe: 1e6, HBM: 16 * unit.GiB, InfeedDepth: 1, HBMBuffers: 2, OutfeedDepth: 1, Compute: time.Millisecond, Drain: time.Millisecond, Steps: 1, Seed: 1}
	for _, kv := range strings.Fields(cmd)[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("%q: %q is not key=value", cmd, kv)
		}
		n, err := strconv.Atoi(v)
		d, derr := time.ParseDuration(v)
		set := map[string]*int{"chips": &c.Chips, "vcpus": &c.VCPUs, "numa": &c.NUMANodes, "batch": &c.Batch, "infeed": &c.InfeedDepth,
			"hbm": &c.HBMBuffers, "outfeed": &c.OutfeedDepth, "steps": &c.Steps}
		dur := map[string]*time.Duration{"example": &c.ExampleCost, "load": &c.ParamLoad, "compute": &c.Compute, "drain": &c.Drain}
		switch {
		case set[k] != nil && err == nil:
			*set[k] = n
		case dur[k] != nil && derr == nil:
			*dur[k] = d
		case k == "bytes" && err == nil:
			c.ExampleBytes = unit.Bytes(n)
		case k == "pcie" && err == nil:
			c.PCIe = unit.BytesPerSecond(n)
		default:
			t.Fatalf("%q: bad %s", cmd, kv)
		}
	}
	s, err := NewSim(c)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	names := [...]string{exampleDone: "example done", copyDone: "HBM copy done", loadDone: "load done", computeDone: "compute done", drainDone: "drain done"}
	mxu := [...]string{mxuWaiting: "waiting", mxuLoading: "loading", mxuComputing: "computing", mxuBlocked: "blocked", mxuDone: "done"}
	var b bytes.Buffer
	for len(s.q) > 0 {
		e := s.q[0]
		s.Step()
		ch := s.chips[e.chip]
		who := fmt.Sprintf("chip %d", e.chip)
		if e.kind == exampleDone {
			who += fmt.Sprintf(" worker %d", e.worker)
		}
		fmt.Fprintf(&b, "%7v  %-13s  %-15s  done %d  infeed %d  hbm %d  outfeed %d  mxu %s\n",
			s.now, names[e.kind], who, ch.done, ch.infeed, ch.hbm, ch.outfeed, mxu[ch.mxu])
	}
	r := s.Result()
	fmt.Fprintf(&b, "result: makespan %v for %d steps, stalls per chip: infeed empty %v, HBM copy %v, outfeed full %v\n",
		r.Makespan, c.Steps, r.Stalls.InfeedEmpty, r.Stalls.HBMCopy, r.Stalls.OutfeedFull)
	return b.String()
}
