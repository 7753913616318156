package validate

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/model"
)

//go:embed memory.yaml
var memoryYAML []byte

// The kinds of number a memory case reports.
const (
	// KindOOM: the compiler or the runtime refused the program and said
	// how much it needed ("Used X of Y hbm").
	KindOOM = "oom"
	// KindCompiledUsage: XLA's "Total hbm usage >= X" or another
	// compiler-reported peak of a program that ran.
	KindCompiledUsage = "compiled_usage"
	// KindMemoryAnalysis: jax's CompiledMemoryStats, or MaxText's print of
	// it.
	KindMemoryAnalysis = "memory_analysis"
	// KindProfilePeak: a profiler's HBM peak.
	KindProfilePeak = "profile_peak"
)

// What a reported number covers.
const (
	// ScopeTotal: the program's arguments (parameters, optimizer state)
	// and its temporaries.
	ScopeTotal = "total"
	// ScopeTemp: XLA's HLO temporaries only, without the arguments.
	ScopeTemp = "temp"
)

// The sets of cases: A was collected before any modelling against the
// table, B after.
const (
	SetA = "A"
	SetB = "B"
)

// setsOf lists the sets (A first) that some row is in; set reads a
// row's set.
func setsOf[T any](rows []T, set func(T) string) []string {
	var out []string
	for _, s := range []string{SetA, SetB} {
		if slices.ContainsFunc(rows, func(r T) bool { return set(r) == s }) {
			out = append(out, s)
		}
	}
	return out
}

// Breakdown is jax's CompiledMemoryStats as a source gives it, in bytes
// per JAX device; 0 is not given.
type Breakdown struct {
	Argument      int64 `yaml:"argument,omitempty" json:"argument_bytes,omitempty"`
	Output        int64 `yaml:"output,omitempty" json:"output_bytes,omitempty"`
	Alias         int64 `yaml:"alias,omitempty" json:"alias_bytes,omitempty"`
	Temp          int64 `yaml:"temp,omitempty" json:"temp_bytes,omitempty"`
	HostTemp      int64 `yaml:"host_temp,omitempty" json:"host_temp_bytes,omitempty"`
	GeneratedCode int64 `yaml:"generated_code,omitempty" json:"generated_code_bytes,omitempty"`
}

// Config is a training configuration in the field names and
// sub-structures of the table of published runs (Run), so that Run.Setup
// builds its job and mesh.
type Config struct {
	Generation         string     `yaml:"generation" json:"generation"`
	AcceleratorType    string     `yaml:"accelerator_type" json:"accelerator_type"`
	Slices             int        `yaml:"slices" json:"slices"`
	Model              model.Spec `yaml:"model" json:"model"`
	SeqLen             int        `yaml:"seq_len" json:"seq_len"`
	PerDeviceBatchSize float64    `yaml:"per_device_batch_size" json:"per_device_batch_size"`
	GlobalBatch        int        `yaml:"global_batch_sequences" json:"global_batch_sequences"`
	Devices            int        `yaml:"devices" json:"devices"`
	Chips              int        `yaml:"chips" json:"chips"`
	Layout             Layout     `yaml:"layout" json:"layout"`
	RematPolicy        string     `yaml:"remat_policy" json:"remat_policy"`
	RematCustom        string     `yaml:"remat_custom,omitempty" json:"remat_custom,omitempty"`
	WeightDType        string     `yaml:"weight_dtype" json:"weight_dtype"`
	MuDType            string     `yaml:"mu_dtype,omitempty" json:"mu_dtype,omitempty"`
	OptType            string     `yaml:"opt_type,omitempty" json:"opt_type,omitempty"`
	Quantization       string     `yaml:"quantization" json:"quantization"`
	OptimizerOffload   bool       `yaml:"optimizer_memory_host_offload,omitempty" json:"optimizer_memory_host_offload,omitempty"`
	ParameterOffload   bool       `yaml:"parameter_memory_host_offload,omitempty" json:"parameter_memory_host_offload,omitempty"`
	VocabTiles         int        `yaml:"num_vocab_tiling,omitempty" json:"num_vocab_tiling,omitempty"`
	Attention          string     `yaml:"attention,omitempty" json:"attention,omitempty"`
	// CapacityFactor is MaxText's capacity_factor for a mixture of experts:
	// -1 (or 0) dropless, else the factor its dropping dispatch pads to.
	CapacityFactor float64 `yaml:"capacity_factor,omitempty" json:"capacity_factor,omitempty"`
	// GMMTileRows is the row tile of a dropless mixture of experts'
	// grouped GEMMs, the mean over a layer's nine (cost.Job.GMMTile),
	// where the run's kernels did not tile at MaxText's default 512 rows:
	// a recipe's wi_tile_*_batch_seq and wo_tile_*_batch_seq, or the tiles
	// tokamax's ragged_dot tunes for itself. 0: the default.
	GMMTileRows float64 `yaml:"gmm_tile_rows,omitempty" json:"gmm_tile_rows,omitempty"`
}

// Run is the configuration as a row of the runs table, for Run.Setup. A
// memory case has no published MFU; the FLOP convention, which Setup
// checks and memory does not use, is "none".
func (c Config) Run(id string) Run {
	return Run{Cited: Cited{ID: id}, Config: c, Published: Published{FLOPsConvention: "none"}}
}

// MemoryCase is one number XLA reported for a stated training
// configuration: what a step needed (an out-of-memory failure) or used.
type MemoryCase struct {
	Cited `yaml:",inline"`
	Date  string `yaml:"date" json:"date"`
	Set   string `yaml:"set" json:"set"`
	Kind  string `yaml:"kind" json:"kind"`
	// Scope is ScopeTotal or ScopeTemp.
	Scope string `yaml:"scope" json:"scope"`
	// ReportedBytes is the number, per JAX device; CapacityBytes the HBM
	// XLA had for that scope, as it printed it (0: not stated). An oom
	// case whose source says only that it ran out of memory has no
	// ReportedBytes (0): it is held to refused-or-not alone.
	ReportedBytes int64     `yaml:"reported_bytes" json:"reported_bytes"`
	CapacityBytes int64     `yaml:"capacity_bytes,omitempty" json:"xla_capacity_bytes,omitempty"`
	Breakdown     Breakdown `yaml:"breakdown,omitempty" json:"breakdown,omitzero"`
	Quote         string    `yaml:"quote" json:"quote"`
	// Unmodelled lists the run's settings that size a buffer and that the
	// configuration cannot state.
	Unmodelled string `yaml:"unmodelled,omitempty" json:"unmodelled,omitempty"`
	Notes      string `yaml:"notes,omitempty" json:"notes,omitempty"`
	Config     `yaml:",inline"`
}

// MemoryCases is the built-in memory table.
func MemoryCases() ([]MemoryCase, error) { return ParseMemory(memoryYAML) }

// ParseMemory reads a memory table (YAML): unknown fields, fractional
// numbers where whole ones belong, NaN and infinities are errors, each
// naming its case and field.
func ParseMemory(data []byte) ([]MemoryCase, error) {
	return parseTable[MemoryCase](data, memoryTable)
}

// BytesStated says whether the source gives the bytes; an oom case may
// say only that the step ran out of memory.
func (c MemoryCase) BytesStated() bool { return c.ReportedBytes > 0 }

// check validates a case once it is decoded (parseTable has checked its
// source): its number and its configuration.
func (c *MemoryCase) check() error {
	if err := checkDate(c.Date); err != nil {
		return err
	}
	switch {
	case c.Set != SetA && c.Set != SetB:
		return bad("set", strconv.Quote(c.Set), "A (collected before modelling) or B (added later)")
	case c.Kind != KindOOM && c.Kind != KindCompiledUsage && c.Kind != KindMemoryAnalysis && c.Kind != KindProfilePeak:
		return bad("kind", strconv.Quote(c.Kind), "oom, compiled_usage, memory_analysis or profile_peak")
	case c.Scope != ScopeTotal && c.Scope != ScopeTemp:
		return bad("scope", strconv.Quote(c.Scope), "total (arguments and temporaries) or temp (HLO temporaries)")
	case c.ReportedBytes < 0 || c.ReportedBytes == 0 && c.Kind != KindOOM:
		return bad("reported_bytes", c.ReportedBytes, "a positive number of bytes (only an oom case whose source states none may leave it out)")
	case c.CapacityBytes < 0:
		return bad("capacity_bytes", c.CapacityBytes, "bytes, or 0 where not stated")
	case !c.BytesStated() && c.Breakdown != (Breakdown{}):
		return bad("breakdown", fmt.Sprintf("%+v", c.Breakdown), "none for an oom case whose bytes are not stated")
	case c.Kind == KindOOM && c.BytesStated() && c.CapacityBytes == 0:
		return bad("capacity_bytes", c.CapacityBytes, "the HBM XLA had, for an oom case that states its bytes")
	case c.Kind == KindOOM && c.BytesStated() && c.ReportedBytes <= c.CapacityBytes:
		return bad("reported_bytes", c.ReportedBytes, fmt.Sprintf("more than capacity_bytes %d for an oom case", c.CapacityBytes))
	case strings.TrimSpace(c.Quote) == "":
		return bad("quote", `""`, "the source's words")
	}
	if err := c.Breakdown.check(c.Scope, c.ReportedBytes); err != nil {
		return err
	}
	return c.Config.check(c.ID)
}

// gibRounding is how far a total computed from a breakdown printed in
// GiB to one decimal may stray from the printed total: four rounded terms
// and the rounded total, 0.05 GiB each.
const gibRounding = 5 * (1 << 30) / 20

func (b Breakdown) check(scope string, reported int64) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"argument", b.Argument}, {"output", b.Output}, {"alias", b.Alias}, {"temp", b.Temp}, {"host_temp", b.HostTemp}, {"generated_code", b.GeneratedCode}} {
		if f.v < 0 {
			return bad("breakdown."+f.name, f.v, "bytes, or 0 where not given")
		}
	}
	if scope == ScopeTemp && b.Temp != 0 && b.Temp != reported {
		return bad("breakdown.temp", b.Temp, fmt.Sprintf("reported_bytes %d for a temp-scope case", reported))
	}
	if b.Alias > b.Argument+b.Output {
		return bad("breakdown.alias", b.Alias, "at most argument + output")
	}
	if scope == ScopeTotal && b.Argument > 0 && b.Temp > 0 && b.Alias > 0 {
		if sum := b.Argument + b.Output + b.Temp - b.Alias; math.Abs(float64(sum-reported)) > gibRounding {
			return bad("reported_bytes", reported, fmt.Sprintf("argument + output + temp - alias = %d (within 0.25 GiB)", sum))
		}
	}
	return nil
}

// check validates the configuration beyond what Setup does: the counts
// the table states must agree with the accelerator type.
func (c Config) check(id string) error {
	pdb := c.PerDeviceBatchSize
	if math.IsNaN(pdb) || math.IsInf(pdb, 0) || pdb <= 0 {
		return bad(maxtext.PerDeviceBatchSize, pdb, "a positive number of sequences")
	}
	if math.IsNaN(c.CapacityFactor) || math.IsInf(c.CapacityFactor, 0) {
		return bad("capacity_factor", c.CapacityFactor, "-1 or 0 (dropless) or a factor in (0, 64]")
	}
	if c.Slices < 1 {
		return bad("slices", c.Slices, "1 or more")
	}
	s, err := hw.ParseAcceleratorType(c.AcceleratorType)
	if err != nil {
		return err
	}
	if string(s.Chip.Generation) != c.Generation {
		return bad("generation", strconv.Quote(c.Generation), fmt.Sprintf("%q, the accelerator type's", s.Chip.Generation))
	}
	if chips := s.Chips() * c.Slices; c.Chips != chips {
		return bad("chips", c.Chips, fmt.Sprintf("%d (%d slices of %s)", chips, c.Slices, c.AcceleratorType))
	}
	if devices := c.Chips * s.Chip.JAXDevicesPerChip; c.Devices != devices {
		return bad("devices", c.Devices, fmt.Sprintf("%d (%d chips of %d JAX devices)", devices, c.Chips, s.Chip.JAXDevicesPerChip))
	}
	if want := pdb * float64(c.Devices); float64(c.GlobalBatch) != want {
		return bad("global_batch_sequences", c.GlobalBatch, fmt.Sprintf("%s x devices = %g", maxtext.PerDeviceBatchSize, want))
	}
	_, _, err = c.Run(id).Setup()
	return err
}
