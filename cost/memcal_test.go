package cost

import (
	"strings"
	"testing"
)

// TestMeasuredJobParsed: a calibration file may record the job it was
// measured on (measured_on); a file without it (written before) still
// reads, and a recorded job a check cannot have written is refused with
// the field named.
func TestMeasuredJobParsed(t *testing.T) {
	base := `"temp_scale": 2, "reported_temp_bytes_per_device": 20, "predicted_temp_bytes_per_device": 10, "source": "compile.log"`
	if c, err := ParseMemoryCalibration([]byte("{" + base + "}")); err != nil || c.Job != nil {
		t.Errorf("without measured_on: %+v, %v", c, err)
	}
	good := `{"model": "llama3-8b", "accelerator_type": "v5p-8", "layout": "fsdp=4", "remat": "minimal", "global_batch": 8, "micro_batches": 1}`
	c, err := ParseMemoryCalibration([]byte("{" + base + `, "measured_on": ` + good + "}"))
	if err != nil || c.Job == nil || *c.Job != (MeasuredJob{"llama3-8b", "v5p-8", "fsdp=4", RematMinimal, "", 8, 1}) {
		t.Errorf("with measured_on: %+v, %v", c.Job, err)
	}
	for _, bad := range []struct{ job, want string }{
		{strings.Replace(good, `"minimal"`, `"sometimes"`, 1), "remat"},
		{strings.Replace(good, `"micro_batches": 1`, `"micro_batches": 9`, 1), "micro_batches"},
		{strings.Replace(good, `"llama3-8b"`, `""`, 1), "model"},
		{`[1]`, "measured_on"},
	} {
		if _, err := ParseMemoryCalibration([]byte("{" + base + `, "measured_on": ` + bad.job + "}")); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("measured_on %s: %v, want an error naming %s", bad.job, err, bad.want)
		}
	}
}
