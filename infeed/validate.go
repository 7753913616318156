package infeed

import (
	"fmt"
	"math"
	"time"

	"shardlab/internal/braces"
	"shardlab/unit"
)

// ConfigError names the Config fields that are wrong, their value and
// what is accepted. Field and Want name fields as {key}, the field's
// name in snake case ({example_bytes}), which Phrase spells; the Value
// of a product or sum of fields starts "= ".
type ConfigError struct {
	Field string
	Value string
	Want  string
}

func (e *ConfigError) Error() string { return e.Phrase(nil) }

// Phrase is the error with the fields it names spelt by name (the CLI's
// flags); nil spells them as the package does (example_bytes).
func (e *ConfigError) Phrase(name func(key string) string) string {
	if name == nil {
		name = func(k string) string { return k }
	}
	return fmt.Sprintf("infeed: %s %s, want %s", braces.Spell(e.Field, name, nil), e.Value, braces.Spell(e.Want, name, nil))
}

func (e *ConfigError) Unwrap() error { return ErrInvalid }

// bad is the error of field, whose value is v.
func bad(field string, v any, want string) error {
	return &ConfigError{Field: field, Value: fmt.Sprint(v), Want: want}
}

// Validate checks the configuration: each field's range, the work the
// simulation would do, and that the input batches fit in the chip's HBM.
func (c Config) Validate() error {
	for _, check := range []func() error{c.checkHost, c.checkInput, c.checkPipeline, c.checkWork, c.checkHBM} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkHost checks the host: its chips, vCPUs, NUMA nodes and placement.
func (c Config) checkHost() error {
	switch {
	case c.Chips < 1 || c.Chips > 64:
		return bad("{chips}", c.Chips, "1 to 64")
	case c.VCPUs < 1 || c.VCPUs > 4096:
		return bad("{vcpus}", c.VCPUs, "1 to 4096")
	case c.NUMANodes < 1 || c.NUMANodes > 8:
		return bad("{numa_nodes}", c.NUMANodes, "1 to 8")
	case !(c.CrossNUMA >= 1 && c.CrossNUMA <= 10): // refuses NaN too
		return bad("{cross_numa}", c.CrossNUMA, "1 to 10")
	}
	if _, err := ParsePlacement(string(c.Placement)); err != nil {
		return err
	}
	if c.Placement == Local && c.VCPUs < c.NUMANodes {
		return bad("{vcpus}", c.VCPUs, fmt.Sprintf("at least one per NUMA node (%d) with local placement", c.NUMANodes))
	}
	return nil
}

// checkInput checks the examples, the batch, the PCIe bandwidth and the
// HBM.
func (c Config) checkInput() error {
	switch {
	case c.ExampleCost < 0 || c.ExampleCost > time.Hour:
		return bad("{example_cost}", c.ExampleCost, "0 to 1h")
	case !(c.Jitter >= 0 && c.Jitter <= 10):
		return bad("{jitter}", c.Jitter, "0 to 10")
	case c.Batch < 1 || c.Batch > 1<<20:
		return bad("{batch}", c.Batch, "1 to 1048576 examples")
	case c.ExampleBytes < 0 || c.ExampleBytes > MaxExampleBytes:
		return bad("{example_bytes}", int64(c.ExampleBytes), fmt.Sprintf("0 to %d bytes", int64(MaxExampleBytes)))
	case !(c.PCIe > 0) || math.IsInf(float64(c.PCIe), 0):
		return bad("{pcie}", float64(c.PCIe), "a positive, finite bandwidth in bytes/s")
	case c.HBM <= 0:
		return bad("{hbm}", int64(c.HBM), "the chip's HBM, positive bytes")
	}
	return nil
}

// checkPipeline checks the queues, the MXU's and the drain's times and
// the steps.
func (c Config) checkPipeline() error {
	switch {
	case c.InfeedDepth < 1:
		return bad("{infeed_depth}", c.InfeedDepth, "at least 1")
	case c.HBMBuffers < 1 || c.HBMBuffers > 1024:
		return bad("{hbm_buffers}", c.HBMBuffers, "1 to 1024")
	case c.OutfeedDepth < 1:
		return bad("{outfeed_depth}", c.OutfeedDepth, "at least 1")
	case c.ParamLoad < 0:
		return bad("{param_load}", c.ParamLoad, "0 or more")
	case c.Compute <= 0:
		return bad("{compute}", c.Compute, "more than 0")
	case c.Drain < 0:
		return bad("{drain}", c.Drain, "0 or more")
	case c.Steps < 1 || c.Steps > MaxSteps:
		return bad("{steps}", c.Steps, fmt.Sprintf("1 to %d", MaxSteps))
	}
	return nil
}

// checkWork bounds the examples simulated and the simulated time. The
// clock is a time.Duration (int64 nanoseconds, 292 years): the simulated
// time is bounded as if one vCPU did all the host's work, so no sum can
// overflow whatever MinVCPUs tries.
func (c Config) checkWork() error {
	if n := int64(c.Steps) * int64(c.Batch) * int64(c.Chips); n > 50_000_000 {
		return bad("{steps} x {batch} x {chips}", fmt.Sprintf("= %d", n), "at most 50 million examples")
	}
	year := float64(365 * 24 * time.Hour)
	limit := fmt.Sprintf("at most %.0f years of simulated time", float64(MaxSimulated)/year)
	examples := float64(c.Steps) * float64(c.Batch) * float64(c.Chips)
	if host := examples * float64(c.ExampleCost) * c.CrossNUMA; host > float64(MaxSimulated) {
		return bad("{steps} x {batch} x {chips} x {example_cost} x {cross_numa}", fmt.Sprintf("= %.3g years", host/year), limit)
	}
	hbmCopy := float64(c.ExampleBytes) * float64(c.Batch) / float64(c.PCIe) * 1e9
	if mxu := float64(c.Steps) * (float64(c.ParamLoad) + float64(c.Compute) + float64(c.Drain) + hbmCopy); mxu > float64(MaxSimulated) {
		return bad("{steps} x ({param_load} + {compute} + {drain} + the HBM copy)", fmt.Sprintf("= %.3g years", mxu/year), limit)
	}
	return nil
}

// checkHBM refuses input batches that do not fit in the chip's HBM: the
// HBMBuffers batches of Batch examples of ExampleBytes it holds at once
// (at most 2^30 bytes × 2^20 examples × 1024 buffers, 2^60: within
// int64).
func (c Config) checkHBM() error {
	need := float64(c.ExampleBytes) * float64(c.Batch) * float64(c.HBMBuffers)
	if need <= float64(c.HBM) {
		return nil
	}
	return &ConfigError{Field: "{example_bytes} x {batch} x {hbm_buffers}",
		Value: fmt.Sprintf("= %d x %d x %d = %v", int64(c.ExampleBytes), c.Batch, c.HBMBuffers, unit.Bytes(need)),
		Want:  fmt.Sprintf("at most the chip's HBM, %v", c.HBM)}
}
