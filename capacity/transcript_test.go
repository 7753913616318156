package capacity

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/internal/golden"
)

// TestTranscripts runs the scripts of testdata/*.transcript
// (golden.Transcripts): each command places slices on a TPU7x
// reservation and prints the events the simulation handles, one a line:
// the time, the event, and the state after it (phase, the job's failed
// sub-blocks not yet replaced, healthy spares, work since the last
// checkpoint, productive time, interruptions). -update rewrites the
// files; the first block's comment derives its trace by hand.
func TestTranscripts(t *testing.T) { golden.Transcripts(t, "run", runScript) }

// runScript runs "run key=value ...". It is over 80 lines because it
// reads the command's keys and prints each event with its state.
func runScript(t *testing.T, cmd string) string {
	slice, slices, spares, mode := "tpu7x-256", 1, 0, AllCapacity
	c := Config{Repair: time.Hour, Startup: 10 * time.Minute, Save: 5 * time.Minute, Restore: 5 * time.Minute,
		Interval: time.Hour, Horizon: 6 * time.Hour, Seed: 1}
	for _, kv := range strings.Fields(cmd)[1:] {
		k, v, _ := strings.Cut(kv, "=")
		d, derr := time.ParseDuration(v)
		n, nerr := strconv.Atoi(v)
		durs := map[string]*time.Duration{"repair": &c.Repair, "recovery": &c.Recovery, "startup": &c.Startup, "save": &c.Save,
			"restore": &c.Restore, "interval": &c.Interval, "maint-every": &c.MaintenanceEvery, "maint-down": &c.MaintenanceDown, "horizon": &c.Horizon}
		switch {
		case durs[k] != nil && derr == nil:
			*durs[k] = d
		case k == "slice":
			slice = v
		case k == "slices" && nerr == nil:
			slices = n
		case k == "spares" && nerr == nil:
			spares = n
		case k == "seed" && nerr == nil:
			c.Seed = uint64(n)
		case k == "failures":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %v", cmd, err)
			}
			c.ChipFailuresPerHour = f
		case k == "mode" && v == "managed":
			mode = Managed
		case k == "granularity":
			g, err := ParseGranularity(v)
			if err != nil {
				t.Fatalf("%q: %v", cmd, err)
			}
			c.Granularity = g
		default:
			t.Fatalf("%q: bad %s", cmd, kv)
		}
	}
	s, err := hw.ParseTPU(slice)
	if err != nil {
		t.Fatal(err)
	}
	holdback := 0.0
	if mode == Managed {
		holdback = 0.1
	}
	r, err := New(s.Chip, mode, 1, holdback)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Place(r, s, slices, spares)
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	sim, err := NewSim(p, c)
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	phases := [...]string{running: "running", saving: "saving", recovering: "recovering", waiting: "waiting", startup: "startup", restoring: "restoring", maintDown: "maintenance down"}
	var b strings.Builder
	for {
		before := sim.res
		end, fail, repair, maint := sim.phaseEnd, sim.nextFail, sim.nextRepair(), sim.nextMaint
		ph := sim.ph
		if !sim.Step() {
			break
		}
		var ev string
		switch sim.now {
		case end:
			ev = "end of " + phases[ph]
		case fail:
			ev = "failure in a spare"
			if sim.res.Interruptions > before.Interruptions || sim.missing > 0 && ph != sim.ph {
				ev = "failure in the job"
			}
		case repair:
			ev = "repair done"
		case maint:
			ev = "maintenance"
		}
		fmt.Fprintf(&b, "%9v  %-22s  %-16s  missing %d  spares %d  work %v  productive %v  interruptions %d\n",
			sim.now, ev, phases[sim.ph], sim.missing, sim.spares, sim.work, sim.res.Productive, sim.res.Interruptions)
	}
	res := sim.Result()
	fmt.Fprintf(&b, "result: goodput %.4f, productive %v of %v, badput %+v", res.Goodput(), res.Productive, res.Horizon, res.Badput)
	return b.String()
}
