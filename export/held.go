package export

import (
	"fmt"
	"io"
	"slices"

	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/unit"
)

// Held is what an export to MaxText (its config, or the xpk command that
// launches it) holds where that is not plan's own choice. Plan, over
// every schedule, chose Shown, which MaxText cannot run as costed
// (Refused, MaxText's error: a 1F1B or interleaved 1F1B pipeline, maxtext
// issue 752); the export plans over what MaxText runs (MaxTextOptions),
// so it holds Plan, MaxText's best: another layout, or the same one under
// a schedule MaxText runs.
type Held struct {
	Shown   plan.Plan
	Refused error
	Plan    plan.Plan
}

// Search plans one job's options as a front end plans them
// (plan.ParseRequest, plan.Search and Plan.WeighOffload, under the front
// end's own limits).
type Search func(plan.Options) (plan.Plan, error)

// MaxTextHeld is what an export to MaxText of options o holds, given p,
// the plan of o that plan shows (over every schedule, unless o limits it
// to MaxText's): nil when MaxText runs p as costed, and the export
// holds p; else the Held whose Plan is search's plan of MaxTextOptions(o).
// Search runs only then. Where MaxText runs no plan of o (search's error,
// or MaxText's refusal of the plan it found, as when p is already limited
// to what MaxText runs), the error says why, with the Held's Shown and
// Refused and no Plan. Every front end asks it, so that what its MaxText
// and xpk exports hold, and what it says of them, are the same.
func MaxTextHeld(o plan.Options, p plan.Plan, search Search) (*Held, error) {
	_, refused := MaxText(p)
	if refused == nil {
		return nil, nil
	}
	h := &Held{Shown: p, Refused: refused}
	if p.Request.Framework == plan.FrameworkMaxText {
		return h, refused // p is MaxText's best already: no other
	}
	mo, err := MaxTextOptions(o)
	var best plan.Plan
	if err == nil {
		best, err = search(mo)
	}
	if err == nil {
		_, err = MaxText(best)
	}
	if err != nil {
		return h, err
	}
	h.Plan = best
	return h, nil
}

// Note says on one line that the export holds MaxText's best and not
// the plan shown: the plan's layout with its schedule, what MaxText
// cannot run of it, and the layout held with its MFU and step time. The
// export's header carries it as a comment, and a front end says it
// beside the file.
func (h *Held) Note() string {
	return fmt.Sprintf("plan chooses %s, which MaxText cannot run (%s); this export holds MaxText's best, %s",
		summary(h.Shown), refusedWhat(h.Refused), summary(h.Plan))
}

// summary is a plan's layout, in JAX devices as its mesh option takes
// it, with its pipeline's schedule, MFU and step time.
func summary(p plan.Plan) string {
	e := p.Best.Estimate
	s := layoutSpec(p)
	if e.Mesh.Size(mesh.Pipeline) > 1 {
		s += " under the " + string(e.Job.Schedule) + " schedule"
		if e.Job.Chunks > 1 {
			s += fmt.Sprintf(" of %d chunks a device", e.Job.Chunks)
		}
	}
	return fmt.Sprintf("%s (MFU %s, step %v)", s, e.MFUPeaks(), unit.Seconds(e.Time.Step.Seconds()))
}

// refusedWhat is the setting MaxText refuses in err: its field and
// value, in plan's words where it names an option.
func refusedWhat(err error) string {
	if xe, ok := err.(*Error); ok {
		return plan.Note{Text: xe.Field}.Phrase(nil) + " " + xe.Value
	}
	return err.Error()
}

// MaxText is the MaxText config of the plan held, with Note as a comment
// under its title.
func (h *Held) MaxText() (MaxTextConfig, error) {
	cfg, err := MaxText(h.Plan)
	return cfg.withNote(h.Note()), err
}

// XPK writes the xpk command that launches the plan held, with Note as a
// comment under its title.
func (h *Held) XPK(w io.Writer, o XPKOptions) error { return writeXPK(w, h.Plan, o, h.Note()) }

// MaxTextOf is the MaxText config an export of plan p writes: that of
// what it holds in p's place where held is not nil (Held.MaxText), else
// p's own. Every front end asks it.
func MaxTextOf(p plan.Plan, held *Held) (MaxTextConfig, error) {
	if held != nil {
		return held.MaxText()
	}
	return MaxText(p)
}

// XPKOf writes the xpk command an export of plan p writes, as MaxTextOf
// makes its config.
func XPKOf(w io.Writer, p plan.Plan, held *Held, o XPKOptions) error {
	if held != nil {
		return held.XPK(w, o)
	}
	return XPK(w, p, o)
}

// withNote is c with note, unless empty, as a comment under its title.
func (c MaxTextConfig) withNote(note string) MaxTextConfig {
	if note == "" || len(c.Comments) == 0 {
		return c
	}
	c.Comments = slices.Insert(slices.Clone(c.Comments), 1, note)
	return c
}

// Steps are the verify steps of the plan held (Verify, Verification.Steps),
// for a front end to give where it shows the plan MaxText cannot run but
// its MaxText export holds MaxText's best: Held names that layout, and
// the first note says the steps are its, with Note.
func (h *Held) Steps(model string, c Commands) Steps {
	s := Verify(h.Plan, model).Steps(c)
	s.Held = h.Plan.Best.Estimate.Mesh.String()
	if d, err := h.Plan.Devices(); err == nil {
		s.Held = d.String()
	}
	s.Notes = append([]string{"the steps are of the layout a MaxText export holds, not of the plan: " + h.Note()}, s.Notes...)
	return s
}
