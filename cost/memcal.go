package cost

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
)

// MemoryCalibration is what a compile of a job reported of its
// temporaries (everything but the parameters and the optimizer state,
// which XLA counts as the program's arguments) against cost's estimate of
// the same job: Job.TempScale = Reported / Predicted makes the estimate
// match it. `shardlab check --compile-log` writes one; `plan
// --calibration` reads it.
type MemoryCalibration struct {
	TempScale float64 `json:"temp_scale"`
	Reported  int64   `json:"reported_temp_bytes_per_device"`
	Predicted int64   `json:"predicted_temp_bytes_per_device"`
	// Source names the compile log and the job it was read against.
	Source string `json:"source"`
	// Job is the job the log was compared with, for a plan to hold its
	// own against (absent in a file written before it was recorded).
	Job *MeasuredJob `json:"measured_on,omitempty"`
}

// MeasuredJob is the job a memory calibration was measured on: the
// model, one slice's accelerator type, the layout in chips, the remat
// policy, the global batch and the micro-batches a step (gradient
// accumulation or a pipeline's). A factor is XLA's temporaries of the
// program it was measured on over the model's: under another remat
// policy the temporaries are other tensors, and on another layout, global
// batch or micro-batch count another program's, for which it is a guess
// (plan warns of each).
type MeasuredJob struct {
	Model           string `json:"model"`
	AcceleratorType string `json:"accelerator_type"`
	Layout          string `json:"layout"`
	Remat           Remat  `json:"remat"`
	// RematCustom is a custom policy's places (Places.String).
	RematCustom  string `json:"remat_custom,omitempty"`
	GlobalBatch  int    `json:"global_batch"`
	MicroBatches int    `json:"micro_batches"`
}

// check refuses a measured job a calibration file cannot have come from.
func (m MeasuredJob) check() error {
	printable := func(s string) bool {
		return strings.TrimSpace(s) != "" && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
	}
	switch {
	case !printable(m.Model) || !printable(m.AcceleratorType) || !printable(m.Layout):
		return fmt.Errorf("measured_on model %q, accelerator_type %q, layout %q, want printable text each", m.Model, m.AcceleratorType, m.Layout)
	case !slices.Contains(policies[:], m.Remat):
		return fmt.Errorf("measured_on remat %q, want a remat policy", m.Remat)
	case m.RematCustom != "" && m.Remat != RematCustom:
		return fmt.Errorf("measured_on remat_custom %q with remat %q, want remat custom", m.RematCustom, m.Remat)
	case m.GlobalBatch < 1 || m.MicroBatches < 1 || m.MicroBatches > m.GlobalBatch:
		return fmt.Errorf("measured_on global_batch %d, micro_batches %d, want 1 <= micro_batches <= global_batch", m.GlobalBatch, m.MicroBatches)
	}
	return nil
}

// ParseMemoryCalibration reads a calibration file: one JSON object with
// exactly MemoryCalibration's keys, a temp_scale in [MinTempScale,
// MaxTempScale] that is Reported / Predicted, and a source.
func ParseMemoryCalibration(data []byte) (MemoryCalibration, error) {
	var c MemoryCalibration
	bad := func(format string, a ...any) (MemoryCalibration, error) {
		return MemoryCalibration{}, fmt.Errorf("cost: memory calibration: "+format+": %w", append(a, ErrJob)...)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return bad("not one JSON object (%v)", err)
	}
	want := []string{"temp_scale", "reported_temp_bytes_per_device", "predicted_temp_bytes_per_device", "source"}
	for k := range raw {
		if !slices.Contains(want, k) && k != "measured_on" {
			return bad("key %q, want only %s and measured_on", k, strings.Join(want, ", "))
		}
	}
	for _, k := range want {
		if _, ok := raw[k]; !ok {
			return bad("no %s", k)
		}
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return bad("%v", err)
	}
	switch {
	case !(c.TempScale >= MinTempScale && c.TempScale <= MaxTempScale):
		return bad("temp_scale %v, want a factor in [%g, %g]", c.TempScale, MinTempScale, MaxTempScale)
	case c.Reported <= 0 || c.Predicted <= 0:
		return bad("reported and predicted temp bytes %d and %d, want positive numbers", c.Reported, c.Predicted)
	case math.Abs(c.TempScale-float64(c.Reported)/float64(c.Predicted)) > 1e-6*c.TempScale:
		return bad("temp_scale %v, want reported / predicted = %v", c.TempScale, float64(c.Reported)/float64(c.Predicted))
	case strings.TrimSpace(c.Source) == "" || strings.ContainsFunc(c.Source, func(r rune) bool { return !unicode.IsPrint(r) }):
		return bad("source %q, want printable text naming the compile log", c.Source)
	}
	if c.Job != nil {
		if err := c.Job.check(); err != nil {
			return bad("%v", err)
		}
	}
	return c, nil
}
