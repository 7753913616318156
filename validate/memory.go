package validate

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/model"
	"shardlab/schema"
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

// MemorySource says where a memory case was published: a file (Path) or
// an issue or pull request (Issue) of Repo, at Commit where known, and
// where its configuration is read when that is elsewhere.
type MemorySource struct {
	Repo         string `yaml:"repo" json:"repo"`
	Path         string `yaml:"path,omitempty" json:"path,omitempty"`
	Issue        string `yaml:"issue,omitempty" json:"issue,omitempty"`
	Commit       string `yaml:"commit,omitempty" json:"commit,omitempty"`
	ConfigPath   string `yaml:"config_path,omitempty" json:"config_path,omitempty"`
	ConfigCommit string `yaml:"config_commit,omitempty" json:"config_commit,omitempty"`
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
}

// Run is the configuration as a row of the runs table, for Run.Setup. A
// memory case has no published MFU; the FLOP convention, which Setup
// checks and memory does not use, is "none".
func (c Config) Run(id string) Run {
	return Run{ID: id, Config: c, Published: Published{FLOPsConvention: "none"}}
}

// MemoryCase is one number XLA reported for a stated training
// configuration: what a step needed (an out-of-memory failure) or used.
type MemoryCase struct {
	ID     string       `yaml:"id" json:"id"`
	Source MemorySource `yaml:"source" json:"source"`
	Date   string       `yaml:"date" json:"date"`
	Set    string       `yaml:"set" json:"set"`
	Kind   string       `yaml:"kind" json:"kind"`
	// Scope is ScopeTotal or ScopeTemp.
	Scope string `yaml:"scope" json:"scope"`
	// ReportedBytes is the number, per JAX device; CapacityBytes the HBM
	// XLA had for that scope, as it printed it (0: not stated). An oom
	// case whose source says only that it ran out of memory has no
	// ReportedBytes (0): it is held to refused-or-not alone.
	ReportedBytes int64     `yaml:"reported_bytes" json:"reported_bytes"`
	CapacityBytes int64     `yaml:"capacity_bytes,omitempty" json:"hbm_capacity_bytes,omitempty"`
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
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("validate: memory table: %s: %w", strings.ReplaceAll(err.Error(), "\n", "; "), ErrInvalid)
	}
	list := &root
	if list.Kind == yaml.DocumentNode && len(list.Content) == 1 {
		list = list.Content[0]
	}
	switch {
	case root.Kind == 0 || list.Kind == yaml.SequenceNode && len(list.Content) == 0:
		return nil, fmt.Errorf("validate: memory table has no cases, want a list of cases: %w", ErrInvalid)
	case list.Kind != yaml.SequenceNode:
		return nil, fmt.Errorf("validate: memory table (line %d) is not a list, want a list of cases: %w", list.Line, ErrInvalid)
	}
	for i, n := range list.Content {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("validate: memory case %d (line %d) is not a mapping of fields, want one: %w", i+1, n.Line, ErrInvalid)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cases []MemoryCase
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("validate: memory table: %s: %w", describeYAMLError(&root, err), ErrInvalid)
	}
	seen := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		if strings.TrimSpace(c.ID) == "" || strings.ContainsAny(c.ID, " \t\n") || seen[c.ID] {
			return nil, fmt.Errorf("validate: memory case %d: id = %q, want a unique id without spaces: %w", i+1, c.ID, ErrInvalid)
		}
		seen[c.ID] = true
		if i < len(list.Content) {
			if err := numbers(list.Content[i], reflect.TypeFor[MemoryCase](), ""); err != nil {
				return nil, &MemoryCaseError{ID: c.ID, Err: err}
			}
		}
		if err := c.check(); err != nil {
			return nil, &MemoryCaseError{ID: c.ID, Err: err}
		}
	}
	return cases, nil
}

// numbers checks what yaml lets through when it decodes: a number that
// lands in an integer field must be written as a whole number (yaml
// truncates 1.5 to 1), and one that lands in a float field must be
// finite. t is the Go type n decodes into; path names the field.
func numbers(n *yaml.Node, t reflect.Type, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.ScalarNode && isInt(t.Kind()):
		if n.ShortTag() != "!!int" {
			return bad(path, n.Value, "a whole number")
		}
	case n.Kind == yaml.ScalarNode && (t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32):
		if v, err := strconv.ParseFloat(strings.TrimPrefix(n.Value, "+"), 64); n.ShortTag() == "!!float" && (err != nil || math.IsNaN(v) || math.IsInf(v, 0)) {
			return bad(path, n.Value, "a finite number")
		}
	case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, c := range n.Content {
			if err := numbers(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if k.Value == "<<" {
				ft, ok = t, true // a merge: its mapping holds this struct's fields
			}
			if !ok {
				continue // the decoder refuses unknown fields
			}
			p := path // a merge's fields are this struct's
			if k.Value != "<<" && path != "" {
				p = path + "." + k.Value
			} else if k.Value != "<<" {
				p = k.Value
			}
			if err := numbers(v, ft, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// yamlFields maps a struct's yaml field names to their types, with the
// fields of inline structs.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline"):
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
		case name == "":
			out[strings.ToLower(f.Name)] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

// MemoryCaseError is a case of a memory table that is not valid: its id
// and what is wrong. It wraps ErrInvalid and the cause.
type MemoryCaseError struct {
	ID  string
	Err error
}

func (e *MemoryCaseError) Error() string {
	return fmt.Sprintf("validate: memory case %s: %v", e.ID, e.Err)
}
func (e *MemoryCaseError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

var hexCommit = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// BytesStated says whether the source gives the bytes; an oom case may
// say only that the step ran out of memory.
func (c MemoryCase) BytesStated() bool { return c.ReportedBytes > 0 }

// check validates a case once it is decoded: its source, its number and
// its configuration.
func (c *MemoryCase) check() error {
	if err := c.Source.check(); err != nil {
		return err
	}
	if _, err := time.Parse("2006-01-02", c.Date); err != nil {
		if _, err := time.Parse("2006-01", c.Date); err != nil {
			return bad("date", strconv.Quote(c.Date), "YYYY-MM-DD or YYYY-MM")
		}
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

func (s MemorySource) check() error {
	switch {
	case strings.Count(s.Repo, "/") != 1 || strings.ContainsAny(s.Repo, " \t\n"):
		return bad("source.repo", strconv.Quote(s.Repo), "owner/name")
	case strings.TrimSpace(s.Path) == "" && strings.TrimSpace(s.Issue) == "":
		return bad("source", "no path or issue", "a path or an issue")
	case s.Commit != "" && !hexCommit.MatchString(s.Commit):
		return bad("source.commit", strconv.Quote(s.Commit), "7 to 40 lower-case hex digits")
	case s.ConfigCommit != "" && !hexCommit.MatchString(s.ConfigCommit):
		return bad("source.config_commit", strconv.Quote(s.ConfigCommit), "7 to 40 lower-case hex digits")
	}
	return nil
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

// yamlLine is the line number that yaml's type errors start with.
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// describeYAMLError names the field of each of a decoding error's
// complaints: yaml says only the line, so the line is looked up in the
// document's node tree.
func describeYAMLError(root *yaml.Node, err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	var msgs []string
	for _, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			msgs = append(msgs, e)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		what := m[2]
		if strings.Contains(what, " into int") {
			what += " (want a whole number)"
		}
		if f := fieldAt(root, line); f != "" {
			msgs = append(msgs, fmt.Sprintf("line %d: %s: %s", line, f, what))
		} else {
			msgs = append(msgs, e)
		}
	}
	return strings.Join(msgs, "; ")
}

// fieldAt names the field whose key or value sits on a line of a table
// ("case 3 (mt-52b-v4-384) model.d_model"), or "".
func fieldAt(root *yaml.Node, line int) string {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.SequenceNode {
		return ""
	}
	for i, c := range n.Content {
		label := fmt.Sprintf("case %d%s", i+1, caseID(c))
		if c.Line == line && c.Kind != yaml.MappingNode {
			return label
		}
		if f := fieldPath(c, line, ""); f != "" {
			return label + " " + f
		}
	}
	return ""
}

// fieldPath is the dotted path of the field under n whose key or scalar
// value sits on the line, or "".
func fieldPath(n *yaml.Node, line int, path string) string {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if f := fieldPath(v, line, join(k.Value)); f != "" {
				return f // the deepest field on the line
			}
			if k.Line == line || v.Line == line {
				return join(k.Value)
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if c.Kind == yaml.ScalarNode && c.Line == line {
				return p
			}
			if f := fieldPath(c, line, p); f != "" {
				return f
			}
		}
	}
	return ""
}

// caseID is " (id)" for a case's mapping node that has one.
func caseID(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "id" && n.Content[i+1].Kind == yaml.ScalarNode {
			return fmt.Sprintf(" (%s)", n.Content[i+1].Value)
		}
	}
	return ""
}

// MemoryResult is one memory case costed. Bytes are per JAX device, the
// unit the compiler reports in: cost's per-chip figures divided by the
// chip's devices (two on TPU7x, one elsewhere).
type MemoryResult struct {
	Case MemoryCase
	// Memory is cost's estimate, per chip.
	Memory         cost.Memory
	DevicesPerChip int
	// Total is the predicted peak; Arguments what the step takes in and
	// gives back (the parameters and the optimizer state: XLA's
	// arguments, aliased to its outputs); Temp the rest (gradients, held
	// activations, the largest phase's transients).
	Total, Arguments, Temp int64
	// Predicted is Total or Temp, as the case's scope says, and Error is
	// (Predicted − reported) / reported.
	Predicted int64
	Error     float64
	// Refused: for an out-of-memory case, whether the prediction exceeds
	// Limit, the HBM XLA had: the case's capacity_bytes, or where the
	// source does not state it, cost's usable HBM per device.
	Refused bool
	Limit   int64
	// ArgumentError and TempError compare Arguments and Temp with a
	// memory_analysis breakdown; NaN where the source does not give one.
	ArgumentError, TempError float64
}

// MemoryReport is cost's memory estimate against the memory table.
type MemoryReport struct {
	Results []MemoryResult
	// Batches, when set, holds the published runs' batches against the
	// most their layouts fit (EvaluateBatches).
	Batches *BatchReport
}

// EvaluateMemory costs every case on its configuration.
func EvaluateMemory(cases []MemoryCase) (MemoryReport, error) {
	var rep MemoryReport
	est := cost.NewEstimator()
	for _, c := range cases {
		j, m, err := c.Run(c.ID).Setup()
		if err != nil {
			return rep, fmt.Errorf("validate: memory case %s: %w", c.ID, err)
		}
		mem, err := est.Memory(j, m)
		if err != nil {
			return rep, fmt.Errorf("validate: memory case %s: %w", c.ID, err)
		}
		rep.Results = append(rep.Results, memoryResult(c, mem, m.Multislice.Slice.Chip.JAXDevicesPerChip))
	}
	return rep, nil
}

func memoryResult(c MemoryCase, mem cost.Memory, per int) MemoryResult {
	per = max(per, 1)
	perDevice := func(b int64) int64 { return int64(math.Round(float64(b) / float64(per))) }
	r := MemoryResult{Case: c, Memory: mem, DevicesPerChip: per,
		Total: perDevice(int64(mem.Total())), Arguments: perDevice(int64(mem.Weights + mem.Optimizer)),
		ArgumentError: math.NaN(), TempError: math.NaN()}
	r.Temp = r.Total - r.Arguments
	r.Predicted = r.Total
	if c.Scope == ScopeTemp {
		r.Predicted = r.Temp
	}
	r.Error = math.NaN()
	if c.BytesStated() {
		r.Error = relErr(r.Predicted, c.ReportedBytes)
	}
	r.Limit = c.CapacityBytes
	if r.Limit == 0 && c.Kind == KindOOM {
		r.Limit = perDevice(int64(mem.Usable))
	}
	r.Refused = c.Kind == KindOOM && r.Predicted > r.Limit
	if c.Kind == KindMemoryAnalysis {
		if b := c.Breakdown; b.Argument > 0 {
			r.ArgumentError = relErr(r.Arguments, b.Argument)
		}
		if b := c.Breakdown; b.Temp > 0 {
			r.TempError = relErr(r.Temp, b.Temp)
		}
	}
	return r
}

func relErr(got, want int64) float64 { return float64(got-want) / float64(want) }

// MemoryStats summarises a set of cases: the |error| over the cases that
// did not run out of memory, and how many of those that did cost refuses.
type MemoryStats struct {
	Set        string  `json:"set"`
	N          int     `json:"cases"`
	Measured   int     `json:"measured_cases"`
	Median     float64 `json:"median_abs_error"`
	Max        float64 `json:"max_abs_error"`
	OOM        int     `json:"oom_cases"`
	OOMRefused int     `json:"oom_refused"`
	// OOMUnstated is the out-of-memory cases whose source states no
	// bytes: they count in OOM and OOMRefused, in no median.
	OOMUnstated        int `json:"oom_cases_bytes_not_stated,omitempty"`
	OOMUnstatedRefused int `json:"oom_cases_bytes_not_stated_refused,omitempty"`
	Unmodelled         int `json:"cases_with_unmodelled_settings"`
	WithinTenth        int `json:"measured_within_10_percent"`
	// AllMedian is the median |error| over every case that states its
	// bytes, out-of-memory ones included (their messages report the bytes
	// XLA needed too).
	AllMedian float64 `json:"all_median_abs_error"`
	// Stated is the cases whose every setting shardlab's configuration
	// states (no unmodelled settings), their median |error| over all of
	// them, and their out-of-memory cases and how many cost refuses.
	Stated       int     `json:"stated_cases"`
	StatedMedian float64 `json:"stated_median_abs_error"`
	// StatedBytes is how many of the Stated cases give bytes (the
	// median is over them).
	StatedBytes      int `json:"stated_cases_with_bytes"`
	StatedOOM        int `json:"stated_oom_cases"`
	StatedOOMRefused int `json:"stated_oom_refused"`
}

// Summary is the statistics of one set of cases (SetA, SetB).
func (rep MemoryReport) Summary(set string) MemoryStats {
	st := MemoryStats{Set: set}
	var errs, all, stated []float64
	for _, r := range rep.Results {
		if r.Case.Set != set {
			continue
		}
		st.N++
		if r.Case.BytesStated() {
			all = append(all, math.Abs(r.Error))
		} else {
			st.OOMUnstated++
			if r.Refused {
				st.OOMUnstatedRefused++
			}
		}
		if r.Case.Unmodelled != "" {
			st.Unmodelled++
		} else {
			st.Stated++
			if r.Case.BytesStated() {
				stated = append(stated, math.Abs(r.Error))
				st.StatedBytes++
			}
			if r.Case.Kind == KindOOM {
				st.StatedOOM++
				if r.Refused {
					st.StatedOOMRefused++
				}
			}
		}
		if r.Case.Kind == KindOOM {
			st.OOM++
			if r.Refused {
				st.OOMRefused++
			}
			continue
		}
		e := math.Abs(r.Error)
		errs = append(errs, e)
		if e <= 0.10 {
			st.WithinTenth++
		}
		st.Max = max(st.Max, e)
	}
	st.Measured = len(errs)
	if len(errs) > 0 {
		st.Median = median(errs)
	}
	if len(all) > 0 {
		st.AllMedian = median(all)
	}
	if len(stated) > 0 {
		st.StatedMedian = median(stated)
	}
	return st
}

// anyUnstated says whether a case states no bytes.
func (rep MemoryReport) anyUnstated() bool {
	for _, r := range rep.Results {
		if !r.Case.BytesStated() {
			return true
		}
	}
	return false
}

// sets lists the report's sets, A first.
func (rep MemoryReport) sets() []string {
	var out []string
	for _, s := range []string{SetA, SetB} {
		for _, r := range rep.Results {
			if r.Case.Set == s {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// verdict says what the prediction means for the case: for an
// out-of-memory case whether cost refuses it too, for a program that
// compiled whether cost would have let it.
func (r MemoryResult) verdict() string {
	c := r.Case
	switch {
	case c.Kind == KindOOM && r.Refused:
		return "refused"
	case c.Kind == KindOOM:
		return "MISSED: predicted to fit"
	case c.CapacityBytes == 0:
		return "-"
	case r.Predicted > c.CapacityBytes:
		return "over capacity, but it compiled"
	}
	return "fits"
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// WriteText writes the memory report for people: a row per case, the
// argument and temporary split where the source gives it, and each set's
// summary.
func (rep MemoryReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, "HBM per JAX device: what XLA reported (validate/memory.yaml) against cost's estimate.")
	fmt.Fprintln(&b, "TPU7x has two JAX devices per chip: its predictions are cost's per-chip bytes / 2; v4 and v5p (megacore) and v6e have one.")
	fmt.Fprintln(&b, "scope total = arguments + temporaries; temp = XLA's HLO temporaries only. error = (predicted - reported) / reported.")
	fmt.Fprintln(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tset\tkind\tscope\treported\tpredicted\terror\tcapacity\tverdict")
	for _, r := range rep.Results {
		c := r.Case
		id, capacity, reported, errText := c.ID, "-", "not stated", "-"
		if c.Unmodelled != "" {
			id += " *"
		}
		if c.CapacityBytes > 0 {
			capacity = gib(c.CapacityBytes)
		} else if r.Limit > 0 {
			capacity = gib(r.Limit) + " +"
		}
		if c.BytesStated() {
			reported, errText = gib(c.ReportedBytes), fmt.Sprintf("%+.1f%%", 100*r.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, c.Set, c.Kind, c.Scope, reported, gib(r.Predicted),
			errText, capacity, r.verdict())
	}
	tw.Flush()
	fmt.Fprintln(&b, "* the run has settings shardlab's configuration cannot state (memory.yaml's unmodelled: MTP, QK-norm, grad_dtype, XLA flags).")
	if rep.anyUnstated() {
		fmt.Fprintln(&b, "not stated: the source says the step ran out of memory but not the bytes; such a case is held to refused or not only.")
		fmt.Fprintln(&b, "+ the source states no capacity: the limit is cost's usable HBM per device (hw/xla_hbm.csv, the capacity XLA prints).")
	}
	rep.writeBreakdown(&b)
	for _, s := range rep.sets() {
		st := rep.Summary(s)
		when := "collected 2026-12-04, before modelling against the table"
		if s == SetB {
			when = "added 2026-12-05, after the model was compared with set A, by the rules in memory.yaml's header"
		}
		fmt.Fprintf(&b, "\nSet %s (%s): %d cases, %d with unmodelled settings\n", s, when, st.N, st.Unmodelled)
		fmt.Fprintf(&b, "  compiled or ran: %d cases, median |error| %.1f%%, max %.1f%%, within 10%%: %d/%d\n",
			st.Measured, 100*st.Median, 100*st.Max, st.WithinTenth, st.Measured)
		fmt.Fprintf(&b, "  OOM cases refused %d/%d (predicted > the HBM XLA had)\n", st.OOMRefused, st.OOM)
		if st.OOMUnstated > 0 {
			fmt.Fprintf(&b, "  of them, %d state no bytes (refused %d/%d): they are in no median below\n", st.OOMUnstated, st.OOMUnstatedRefused, st.OOMUnstated)
		}
		fmt.Fprintf(&b, "  every case, OOM messages included: median |error| %.1f%%\n", 100*st.AllMedian)
		statedMedian := fmt.Sprintf("%.1f%%", 100*st.StatedMedian)
		if st.StatedBytes == 0 {
			statedMedian = "- (none states bytes)"
		}
		fmt.Fprintf(&b, "  the %d cases whose settings shardlab states (no *): median |error| %s, OOM cases refused %d/%d\n",
			st.Stated, statedMedian, st.StatedOOMRefused, st.StatedOOM)
	}
	if rep.Batches != nil {
		b.WriteString("\n")
		if err := rep.Batches.WriteText(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBreakdown writes the memory_analysis cases' arguments and
// temporaries beside cost's: the arguments are the parameters and the
// optimizer state (the train state MaxText donates, so the outputs alias
// them); the temporaries are the rest, gradients included.
func (rep MemoryReport) writeBreakdown(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	n := 0
	for _, r := range rep.Results {
		bd := r.Case.Breakdown
		if r.Case.Kind != KindMemoryAnalysis || (bd.Argument == 0 && bd.Temp == 0) {
			continue
		}
		if n == 0 {
			fmt.Fprintln(b, "\nmemory_analysis: argument = parameters + optimizer state; temp = gradients, held activations and transients.")
			fmt.Fprintln(tw, "case\targument\tpredicted\terror\ttemp\tpredicted\terror")
		}
		n++
		arg, argErr, temp, tempErr := "-", "-", "-", "-"
		if bd.Argument > 0 {
			arg, argErr = gib(bd.Argument), fmt.Sprintf("%+.1f%%", 100*r.ArgumentError)
		}
		if bd.Temp > 0 {
			temp, tempErr = gib(bd.Temp), fmt.Sprintf("%+.1f%%", 100*r.TempError)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Case.ID, arg, gib(r.Arguments), argErr, temp, gib(r.Temp), tempErr)
	}
	tw.Flush()
}

// MemoryJSON is the machine-readable memory report (shardlab validate
// --memory --json).
type MemoryJSON struct {
	Rows    []MemoryRowJSON `json:"rows"`
	Summary []MemoryStats   `json:"summary"`
	Batches *BatchReport    `json:"published_batches,omitempty"`
}

// MemoryRowJSON is one costed memory case; bytes are per JAX device
// unless the name says chip.
type MemoryRowJSON struct {
	ID                 string       `json:"id,omitempty"`
	Set                string       `json:"set,omitempty"`
	Date               string       `json:"date,omitempty"`
	Kind               string       `json:"kind"`
	Scope              string       `json:"scope"`
	Generation         string       `json:"generation"`
	AcceleratorType    string       `json:"accelerator_type"`
	Slices             int          `json:"slices"`
	Model              string       `json:"model"`
	DevicesPerChip     int          `json:"jax_devices_per_chip"`
	Reported           int64        `json:"reported_bytes,omitempty"`
	Capacity           int64        `json:"hbm_capacity_bytes,omitempty"`
	Breakdown          Breakdown    `json:"breakdown,omitzero"`
	PredictedChip      int64        `json:"predicted_total_bytes_per_chip"`
	PredictedTotal     int64        `json:"predicted_total_bytes"`
	PredictedArguments int64        `json:"predicted_argument_bytes"`
	PredictedTemp      int64        `json:"predicted_temp_bytes"`
	Predicted          int64        `json:"predicted_bytes"`
	Error              *float64     `json:"relative_error,omitempty"`
	Refused            *bool        `json:"refused,omitempty"`
	ArgumentError      *float64     `json:"argument_relative_error,omitempty"`
	TempError          *float64     `json:"temp_relative_error,omitempty"`
	PeakPhase          string       `json:"peak_phase"`
	Verdict            string       `json:"verdict"`
	Unmodelled         string       `json:"unmodelled,omitempty"`
	Source             MemorySource `json:"source,omitzero"`
}

// JSON returns the memory report's machine-readable form.
func (rep MemoryReport) JSON() MemoryJSON {
	out := MemoryJSON{Rows: []MemoryRowJSON{}, Summary: []MemoryStats{}, Batches: rep.Batches}
	for _, r := range rep.Results {
		out.Rows = append(out.Rows, r.JSON())
	}
	for _, s := range rep.sets() {
		out.Summary = append(out.Summary, rep.Summary(s))
	}
	return out
}

// JSON returns one costed case's machine-readable form.
func (r MemoryResult) JSON() MemoryRowJSON {
	finite := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	c := r.Case
	row := MemoryRowJSON{ID: c.ID, Set: c.Set, Date: c.Date, Kind: c.Kind, Scope: c.Scope, Generation: c.Generation,
		AcceleratorType: c.AcceleratorType, Slices: c.Slices, Model: c.Model.Name, DevicesPerChip: r.DevicesPerChip,
		Reported: c.ReportedBytes, Capacity: c.CapacityBytes, Breakdown: c.Breakdown, PredictedChip: int64(r.Memory.Total()),
		PredictedTotal: r.Total, PredictedArguments: r.Arguments, PredictedTemp: r.Temp, Predicted: r.Predicted, Error: finite(r.Error),
		ArgumentError: finite(r.ArgumentError), TempError: finite(r.TempError), PeakPhase: r.Memory.Peak, Verdict: r.verdict(),
		Unmodelled: c.Unmodelled, Source: c.Source}
	if c.Kind == KindOOM {
		refused := r.Refused
		row.Refused = &refused
	}
	return row
}

// WriteJSON writes the memory report as indented JSON.
func (rep MemoryReport) WriteJSON(w io.Writer) error {
	return schema.Write(w, rep.JSON())
}
