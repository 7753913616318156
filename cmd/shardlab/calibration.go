package main

import (
	"fmt"
	"io"
	"strings"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/plan"
	"shardlab/unit"
)

// A temporaries' factor (--calibration FILE or --temp-scale X) changes a
// plan's answer: the plan says so, in text a line before the plan and in
// JSON a key beside it, and a calibration measured on another model, TPU
// generation, remat policy, layout, global batch or micro-batches is
// warned about. check writes a calibration file's source
// (calibrationSource) and plan reads the job back from it
// (parseCalibrationSource): one format, here.

// scalesText is what a temporaries' factor scales.
const scalesText = "the estimate of the step's temporaries (gradients, held activations, the largest phase; not the parameters or the optimizer state)"

// calibrationSource is the source check writes in a calibration file: the
// compile log at path, the job it was read against (model, one slice's
// accelerator type, the layout in chips) and the day.
func calibrationSource(path, model, accel, layout, day string) string {
	return fmt.Sprintf("%s, against %s on %s %s, read %s", path, model, accel, layout, day)
}

// measuredJob is the job a calibration was measured on, as its source
// names it.
type measuredJob struct {
	Model  string     `json:"model"`
	Accel  string     `json:"accelerator_type"`
	Layout layoutSpec `json:"layout"`
	// Remat is the job's remat policy, where the file records it (check
	// writes cost.MeasuredJob; a source alone does not say), with a custom
	// policy's places.
	Remat       cost.Remat `json:"remat,omitempty"`
	RematCustom string     `json:"remat_custom,omitempty"`
	// GlobalBatch and MicroBatches are the job's global batch in sequences
	// and the micro-batches of its step, where the file records them (0:
	// a source alone does not say).
	GlobalBatch  int `json:"global_batch,omitempty"`
	MicroBatches int `json:"micro_batches,omitempty"`
}

// layoutSpec is a layout in chips, as plan --json's layout.spec.
type layoutSpec struct {
	Spec string `json:"spec"`
}

// parseCalibrationSource reads the job back from a source
// calibrationSource wrote; ok is false for a source it did not write (a
// file written by hand). The path may hold anything, so the job is what
// follows its last ", against "; a layout may hold a space ("single
// chip"), an accelerator type none.
func parseCalibrationSource(src string) (job measuredJob, ok bool) {
	i := strings.LastIndex(src, ", against ")
	if i < 0 {
		return job, false
	}
	rest := src[i+len(", against "):]
	j := strings.LastIndex(rest, ", read ")
	if j < 0 {
		return job, false
	}
	rest = rest[:j]
	k := strings.LastIndex(rest, " on ")
	if k <= 0 {
		return job, false
	}
	accel, layout, found := strings.Cut(rest[k+len(" on "):], " ")
	if !found || accel == "" || layout == "" {
		return job, false
	}
	return measuredJob{Model: rest[:k], Accel: accel, Layout: layoutSpec{layout}}, true
}

// calibrationJSON is what a plan says of the temporaries' factor it was
// made with (plan --json's temporaries_calibration).
type calibrationJSON struct {
	TempScale float64 `json:"temp_scale"`
	// Flag is the flag that gave it, --calibration or --temp-scale.
	Flag string `json:"flag"`
	File string `json:"file,omitempty"`
	// Scales is what it scales.
	Scales string `json:"scales"`
	// Source is the calibration file's source, and MeasuredOn the job
	// read from it (absent where the source does not name one).
	Source     string       `json:"source,omitempty"`
	MeasuredOn *measuredJob `json:"measured_on,omitempty"`
	Warnings   []string     `json:"warnings"`
}

// calibrationNote is what plan p says of the temporaries' factor: cal,
// read from file, or else scale from --temp-scale; nil without one (a
// factor of 0 or 1 changes nothing).
func calibrationNote(p plan.Plan, file string, cal *cost.MemoryCalibration, scale float64) *calibrationJSON {
	switch {
	case cal != nil:
		c := &calibrationJSON{TempScale: cal.TempScale, Flag: "--calibration", File: file, Scales: scalesText, Source: cal.Source, Warnings: []string{}}
		if j := cal.Job; j != nil {
			c.MeasuredOn = &measuredJob{j.Model, j.AcceleratorType, layoutSpec{j.Layout}, j.Remat, j.RematCustom, j.GlobalBatch, j.MicroBatches}
		} else if job, ok := parseCalibrationSource(cal.Source); ok {
			c.MeasuredOn = &job
		}
		c.Warnings = calibrationWarnings(p, c.MeasuredOn)
		return c
	case scale != 0 && scale != 1:
		return &calibrationJSON{TempScale: scale, Flag: "--temp-scale", Scales: scalesText, Warnings: []string{}}
	}
	return nil
}

// calibrationWarnings are the ways plan p's job is not the one a
// calibration was measured on: another model or TPU generation, remat
// policy, layout, global batch or micro-batches (stepWarnings), or a
// source that does not say.
func calibrationWarnings(p plan.Plan, job *measuredJob) []string {
	if job == nil {
		return []string{"the calibration's source does not name the job it was measured on, so whether its model and TPU generation are this plan's is unchecked"}
	}
	w := []string{}
	if m := p.Request.Model.Name; job.Model != m {
		w = append(w, fmt.Sprintf("the calibration was measured on %s, this plan is of %s: a factor measured on one model need not hold for another", job.Model, m))
	}
	gen := p.Request.Multislice.Slice.Chip.Generation
	s, err := hw.ParseAcceleratorType(job.Accel)
	switch {
	case err != nil:
		w = append(w, fmt.Sprintf("the calibration was measured on %s, not an accelerator type this tool knows, so whether it is this plan's generation (%s) is unchecked", job.Accel, gen))
	case s.Chip.Generation != gen:
		w = append(w, fmt.Sprintf("the calibration was measured on %s (%s), this plan is on %s: a factor measured on one TPU generation need not hold for another", job.Accel, s.Chip.Generation, gen))
	}
	e := p.Best.Estimate.Job
	switch {
	case job.Remat != "" && job.Remat != e.Remat:
		w = append(w, fmt.Sprintf("the calibration was measured under remat %s, this plan's layout uses %s: the temporaries of one policy are other tensors than another's, so its factor need not hold", job.Remat, e.Remat))
	case job.RematCustom != "" && e.Remat == cost.RematCustom && job.RematCustom != e.Custom.String():
		w = append(w, fmt.Sprintf("the calibration was measured under remat custom %s, this plan's layout uses custom %s: the temporaries of one policy are other tensors than another's, so its factor need not hold", job.RematCustom, e.Custom.String()))
	}
	return append(w, stepWarnings(p, job)...)
}

// stepWarnings are the ways plan p's chosen layout runs another program
// than the one a calibration was measured on, whatever its policy: another
// layout (each device's shards of the weights, activations and gradients,
// and the collectives' buffers, are another program's), or another global
// batch or count of micro-batches (the sequences a device holds at once).
// XLA's temporaries of one program are a guess for another's. A file
// that does not record the batch (a source alone) is held to its layout.
func stepWarnings(p plan.Plan, job *measuredJob) []string {
	var w []string
	e := p.Best.Estimate
	if l := e.Mesh.String(); job.Layout.Spec != l {
		w = append(w, fmt.Sprintf("the calibration was measured on layout %s, this plan's is %s: a factor measured on one layout's program is a guess for another's", job.Layout.Spec, l))
	}
	if job.GlobalBatch == 0 {
		return w
	}
	if gb, mb := e.Job.GlobalBatch, max(e.Job.MicroBatches, 1); job.GlobalBatch != gb || job.MicroBatches != mb {
		w = append(w, fmt.Sprintf("the calibration was measured at a global batch of %s in %s, this plan's layout runs %s in %s: a factor measured on one batch's program is a guess for another's, whose devices hold other sequences at once",
			unit.Plural(job.GlobalBatch, "sequence"), unit.Plural(job.MicroBatches, "micro-batch"), unit.Plural(gb, "sequence"), unit.Plural(mb, "micro-batch")))
	}
	return w
}

// writeText writes the note for people: a line, and a line per warning.
func (c *calibrationJSON) writeText(w io.Writer) error {
	var b strings.Builder
	if c.Flag == "--temp-scale" {
		fmt.Fprintf(&b, "Calibration: --temp-scale %g scales %s by %g\n", c.TempScale, c.Scales, c.TempScale)
	} else {
		on := "a job its source does not name"
		if j := c.MeasuredOn; j != nil {
			on = fmt.Sprintf("%s on %s, layout %s", j.Model, j.Accel, j.Layout.Spec)
		}
		fmt.Fprintf(&b, "Calibration: --calibration %s scales %s by %.3f, measured by a compile of %s (source: %s)\n", c.File, c.Scales, c.TempScale, on, c.Source)
	}
	for _, x := range c.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", x)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
