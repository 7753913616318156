package infeed

import (
	"errors"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/unit"
)

// TestInputBatchesFitHBM: the HBMBuffers input batches a chip holds at
// once must fit in its HBM (review171 finding 6: 1 GiB examples ×
// 1048576 a batch, 1 PiB, was simulated on tpu7x's 192 GiB). Exactly the
// HBM is accepted, a byte more refused, naming the fields, the value and
// the chip's HBM.
func TestInputBatchesFitHBM(t *testing.T) {
	s7, err := hw.ParseAcceleratorType("tpu7x-8")
	if err != nil {
		t.Fatal(err)
	}
	chip := s7.Chip
	c := ForSlice(s7)
	if c.HBM != chip.HBM || c.HBM <= 0 {
		t.Fatalf("ForSlice's HBM %v, want the chip's %v", c.HBM, chip.HBM)
	}
	c.Steps, c.Batch, c.HBMBuffers = 2, 1<<20, 2
	c.ExampleBytes = c.HBM / unit.Bytes(c.Batch*c.HBMBuffers)
	c.HBM = c.ExampleBytes * unit.Bytes(c.Batch*c.HBMBuffers) // exactly full
	if err := c.checkHBM(); err != nil {
		t.Errorf("batches exactly filling HBM: %v, want accepted", err)
	}
	c.HBM--
	err = c.Validate()
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("batches a byte over HBM: %v, want a ConfigError", err)
	}
	for _, want := range []string{"infeed: example_bytes x batch x hbm_buffers = ", "x 1048576 x 2 = ", "want at most the chip's HBM, " + c.HBM.String()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// the review's case: 1 GiB examples, 1048576 a batch
	c = ForSlice(s7)
	c.ExampleBytes, c.Batch, c.Steps = unit.GiB, 1<<20, 2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "= 2.00 PiB, want at most the chip's HBM, "+chip.HBM.String()) {
		t.Errorf("1 GiB x 1048576 x 2 on tpu7x: %v, want refused at the chip's HBM", err)
	}
}

// TestConfigErrorsHouseFormat: every refusal names its field, its value
// and what is accepted, as "infeed: field value, want ...", and does not
// end in the sentinel's text.
func TestConfigErrorsHouseFormat(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"vcpus under NUMA nodes", func(c *Config) { c.NUMANodes, c.VCPUs = 2, 1 }, "infeed: vcpus 1, want at least one per NUMA node (2) with local placement"},
		{"placement", func(c *Config) { c.Placement = "far" }, `infeed: placement "far", want local, interleaved or node0`},
		{"example bytes", func(c *Config) { c.ExampleBytes = -1 }, "infeed: example_bytes -1, want 0 to 1073741824 bytes"},
		{"compute", func(c *Config) { c.Compute = 0 }, "infeed: compute 0s, want more than 0"},
		{"hbm buffers", func(c *Config) { c.HBMBuffers = 0 }, "infeed: hbm_buffers 0, want 1 to 1024"},
		{"work", func(c *Config) { c.Steps, c.Batch, c.Chips = MaxSteps, 1<<20, 1 }, "infeed: steps x batch x chips = 104857600000, want at most 50 million examples"},
		{"steps", func(c *Config) { c.Steps = 0 }, "infeed: steps 0, want 1 to 100000"},
	} {
		cfg := base()
		c.set(&cfg)
		err := cfg.Validate()
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want %q wrapping ErrInvalid", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), ErrInvalid.Error()) {
			t.Errorf("%s: %q ends in the sentinel's text", c.name, err)
		}
	}
	if _, err := Run(Config{}); err == nil || strings.Contains(err.Error(), ErrInvalid.Error()) {
		t.Errorf("Run(Config{}) = %v, want an error without the sentinel's text", err)
	}
}
