package export

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/plan"
	"shardlab/unit"
)

// Capacity is how xpk asks GKE for the TPUs ([xpk]
// add_shared_workload_create_autoprovisioning_arguments). xpk reads it
// only on a cluster with node auto-provisioning (xpkCapacityNote).
type Capacity string

// The capacity modes, each an xpk flag of the same name; CapacityDefault
// writes none and leaves the choice to the cluster.
const (
	CapacityDefault     Capacity = ""
	CapacityReservation Capacity = "reservation"
	CapacitySpot        Capacity = "spot"
	CapacityOnDemand    Capacity = "on-demand"
	CapacityFlex        Capacity = "flex"
)

// Capacities lists the modes a user may name.
func Capacities() []Capacity {
	return []Capacity{CapacityReservation, CapacitySpot, CapacityOnDemand, CapacityFlex}
}

// ParseCapacity reads a capacity mode, in any case; "" is CapacityDefault.
func ParseCapacity(s string) (Capacity, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return CapacityDefault, nil
	}
	for _, c := range Capacities() {
		if t == string(c) {
			return c, nil
		}
	}
	var names []string
	for _, c := range Capacities() {
		names = append(names, string(c))
	}
	return "", &Error{Target: "xpk", Field: "capacity", Value: strconv.Quote(s), Want: "want " + strings.Join(names, ", "), Err: ErrInvalid}
}

// ErrInvalid is wrapped by errors in the export's own options.
var ErrInvalid = errors.New("invalid export option")

// namePattern is xpk's name_type ([xpk] ../parser/validators.py): a
// lower-case letter, then letters, digits and dashes, not ending in a
// dash, under 40 characters in all.
var namePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// ValidName checks a cluster or workload name as xpk will.
func ValidName(field, s string) error {
	if !namePattern.MatchString(s) || len(s) > 40 {
		return &Error{Target: "xpk", Field: field, Value: strconv.Quote(s), Want: "want at most 40 lower-case letters, digits and dashes, starting with a letter and not ending with a dash", Err: ErrInvalid}
	}
	return nil
}

// XPKOptions are what the launch needs besides the plan.
type XPKOptions struct {
	Cluster, Workload string
	// DockerImage is an image with MaxText installed, run as it is (xpk's
	// --docker-image); BaseDockerImage one xpk adds the working directory
	// to before it runs it (--base-docker-image). One of the two is needed:
	// xpk's own default base image is python:3.10 ([xpk]
	// ../core/docker_image.py DEFAULT_DOCKER_IMAGE), which has no MaxText.
	DockerImage, BaseDockerImage string
	Capacity                     Capacity
	// Reservation names the reservation under CapacityReservation.
	Reservation string
	// MaxRestarts is how often the JobSet is restarted after a failure,
	// 0 to the package's MaxRestarts.
	MaxRestarts int
	// MaxRestartsGiven says that MaxRestarts is the caller's (given, even
	// as 0), not left at xpk's default of 0.
	MaxRestartsGiven bool
	// CapacityWarnings are the terms of Capacity that bound the workload,
	// as the modes' owner says them for GKE (budget.GKEWarnings, which the
	// front end asks: export sits below budget).
	// XPKWarnings carries them.
	CapacityWarnings []string
}

// MaxRestarts bounds XPKOptions.MaxRestarts, which every front end takes
// up to it: xpk takes any count, but a JobSet restarted more than this is
// failing, not recovering (and JobSet's maxRestarts is an int32).
const MaxRestarts = 1000

//go:embed xpk-tpu-types.txt
var xpkTPUTypesFile string

// xpkVMs is how xpk makes the slice of a TPU type: its system
// characteristics' gce_machine_type, chips_per_vm and vms_per_slice
// ([xpk-sc] get_tpu_system_characteristics_map).
type xpkVMs struct {
	MachineType string
	ChipsPerVM  int
	VMs         int
}

// xpkTPUTypes holds the --tpu-type values xpk accepts, each with the VMs
// xpk makes its slice of.
var xpkTPUTypes = func() map[string]xpkVMs {
	m := map[string]xpkVMs{}
	for _, l := range strings.Split(xpkTPUTypesFile, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 4 {
			panic("export: xpk-tpu-types.txt: want NAME MACHINE_TYPE CHIPS_PER_VM VMS_PER_SLICE, got " + strconv.Quote(l))
		}
		chips, err1 := strconv.Atoi(f[2])
		vms, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || chips < 1 || vms < 1 {
			panic("export: xpk-tpu-types.txt: bad counts in " + strconv.Quote(l))
		}
		m[f[0]] = xpkVMs{MachineType: f[1], ChipsPerVM: chips, VMs: vms}
	}
	return m
}()

// XPKTPUType is the --tpu-type of a slice of the plan, in xpk's topology
// form (tpu7x-4x4x8, v6e-8x16): the accelerator-type prefix and the
// slice's topology ([xpk-sc] get_tpu_system_characteristics_map names
// each system prefix-topology). It fails when xpk has no such type: v2
// and v3, which GKE does not offer, and shapes xpk does not list.
func XPKTPUType(p plan.Plan) (string, error) {
	s := p.Request.Multislice.Slice
	t := s.Chip.AcceleratorPrefix + "-" + s.Topology.String()
	if _, ok := xpkTPUTypes[t]; !ok {
		// xpk's shapes of the same number of chips, to plan with instead
		var same []string
		for k := range xpkTPUTypes {
			shape, ok := strings.CutPrefix(k, s.Chip.AcceleratorPrefix+"-")
			if ok && strings.Contains(shape, "x") && chips(shape) == s.Chips() {
				same = append(same, shape)
			}
		}
		slices.Sort(same)
		want := "xpk (" + xpkCommit + ") has no TPU type of that name"
		switch {
		case !hasPrefix(s.Chip.AcceleratorPrefix):
			want += fmt.Sprintf(" and none for %s: GKE does not offer it", s.Chip.Generation)
		case len(same) > 0:
			want += "; plan with {topology} " + strings.Join(same, " or ")
		default:
			want = xpkSizes(s.Chip, s.Chips())
		}
		return "", unsupported("xpk", "--tpu-type", t, want)
	}
	return t, nil
}

const xpkCommit = "AI-Hypercomputer/xpk@367c8382"

// xpkSizes says, for a slice of n chips of chip where xpk has types of
// the chip's prefix but none of n chips, the chip counts it has and the
// type to plan with: the smallest above n (its smallest where n is below
// them all: v5litepod starts at 2x4, [xpk-sc] supported_topologies), as
// the {tpu} option spells it.
func xpkSizes(chip hw.Chip, n int) string {
	prefix := chip.AcceleratorPrefix
	shapes := map[int]string{}
	for k := range xpkTPUTypes {
		shape, ok := strings.CutPrefix(k, prefix+"-")
		if c := chips(shape); ok && strings.Contains(shape, "x") && c > 0 {
			shapes[c] = shape
		}
	}
	var sizes []string
	next := 0
	for _, c := range slices.Sorted(maps.Keys(shapes)) {
		sizes = append(sizes, strconv.Itoa(c))
		if c > n && next == 0 {
			next = c
		}
	}
	want := fmt.Sprintf("xpk (%s) has no %s type of %d chips, only of %s chips", xpkCommit, prefix, n, errtext.OrList(sizes))
	switch {
	case next == 0:
		return want
	case sizes[0] == strconv.Itoa(next):
		return want + fmt.Sprintf("; plan with {tpu} %s (%s), its smallest", chip.AcceleratorType(next), shapes[next])
	}
	return want + fmt.Sprintf("; plan with {tpu} %s (%s), the next size up", chip.AcceleratorType(next), shapes[next])
}

// XPKWarnings are what the xpk command of plan p and options o does not
// run as asked: its slices' VMs (xpkVMWarnings), o's CapacityWarnings,
// each after the capacity flag, and Spot capacity with no restart, under
// which the first preemption ends the workload: xpk's --max-restarts is
// the JobSet's maxRestarts, "Maximum number of times the JobSet will be
// restarted upon failure. Defaults to 0." ([xpk] ../parser/workload.py
// 621-628), and a Spot VM may be preempted at any time (budget.Spot's
// terms).
func XPKWarnings(p plan.Plan, o XPKOptions) []string {
	out := xpkVMWarnings(p)
	for _, w := range o.CapacityWarnings {
		out = append(out, "--"+string(o.Capacity)+": "+w)
	}
	if o.Capacity == CapacitySpot && o.MaxRestarts == 0 {
		whose := "xpk's default"
		if o.MaxRestartsGiven {
			whose = "given"
		}
		out = append(out, "--spot with --max-restarts 0 ("+whose+"): the JobSet is never restarted, so the first preemption of a Spot VM, which may come at any time, ends the workload; give --max-restarts the restarts to allow")
	}
	return out
}

// xpkVMWarnings are what the plan assumes of its VMs that the xpk command
// does not run as: where xpk makes the slice of other VMs than the plan's
// (hw.Slice.Host), the plan's host count and the VM its input check
// simulates differ from what runs (a chip's DCN share, which the costed
// collectives use, does not). xpk @367c8382 makes every slice of 4-chip
// VMs but the 1-chip ones ([xpk-sc] compute_chips_per_vm: "1 if
// get_topology_product(topology) == 1 else 4"), so v5litepod-8, which the
// Cloud TPU API makes one 8-chip ct5lp-hightpu-8t, is two
// ct5lp-hightpu-4t VMs under xpk. None for a slice xpk has no type of
// (XPKTPUType refuses it).
func xpkVMWarnings(p plan.Plan) []string {
	s := p.Request.Multislice.Slice
	x, ok := xpkTPUTypes[s.Chip.AcceleratorPrefix+"-"+s.Topology.String()]
	h := s.Host()
	if !ok || x.MachineType == h.MachineType && x.VMs == s.Hosts() {
		return nil
	}
	what := "the VM the plan's input check simulates (infeed)"
	if x.VMs != s.Hosts() {
		what = fmt.Sprintf("the host count (%d, not %d) and %s", x.VMs, s.Hosts(), what)
	}
	return []string{fmt.Sprintf("xpk (%s) makes %s of %s of %s each, where the plan has %s of %s: %s differ from what runs",
		xpkCommit, s.AcceleratorType(), unit.Plural(x.VMs, x.MachineType+" VM"), unit.Plural(x.ChipsPerVM, "chip"),
		unit.Plural(s.Hosts(), h.MachineType+" VM"), unit.Plural(h.Chips, "chip"), what)}
}

// xpkCapacityNote says where xpk acts on the capacity flag o writes: xpk
// @367c8382 defines --on-demand, --reservation, --spot and --flex in
// workload create's group "Optional Autoprovisioning Arguments" ([xpk]
// ../parser/workload.py 88-93, 779-820) and reads them only where the
// cluster has autoprovisioning for the TPU ([xpk]
// ../commands/workload.py 475-487, is_autoprovisioning_enabled); on any
// other cluster the workload runs on the node pools the cluster was made
// with, and the flag does nothing. "" when o writes none.
func xpkCapacityNote(o XPKOptions) string {
	if o.Capacity == CapacityDefault {
		return ""
	}
	return fmt.Sprintf("--%s acts only on a cluster with node auto-provisioning: xpk (%s) reads its capacity flags only where the cluster autoprovisions the TPU; on another cluster the workload runs on the node pools the cluster was made with, whatever their capacity",
		o.Capacity, xpkCommit)
}

// chips multiplies out a shape, "4x4x8"; 0 if it is not one.
func chips(shape string) int {
	n := 1
	for _, d := range strings.Split(shape, "x") {
		v, err := strconv.Atoi(d)
		if err != nil || v < 1 {
			return 0
		}
		n *= v
	}
	return n
}

// hasPrefix reports whether xpk has any TPU type of the prefix.
func hasPrefix(prefix string) bool {
	for k := range xpkTPUTypes {
		if strings.HasPrefix(k, prefix+"-") {
			return true
		}
	}
	return false
}

// XPK writes the `xpk workload create` command that launches the plan:
// its TPU type and slices, the capacity and restarts asked for, and the
// MaxText trainer with the plan's settings as --command, after comments
// that say what it is, XPKWarnings under their title line.
func XPK(w io.Writer, p plan.Plan, o XPKOptions) error { return writeXPK(w, p, o, "") }

// writeXPK is XPK with a note, if any, as a comment under the title
// (Held.XPK).
func writeXPK(w io.Writer, p plan.Plan, o XPKOptions, note string) error {
	args, err := XPKArgs(p, o)
	if err != nil {
		return err
	}
	cfg, err := MaxText(p)
	if err != nil {
		return err
	}
	cfg = cfg.withNote(note)
	var b strings.Builder
	for i, l := range cfg.Comments {
		fmt.Fprintf(&b, "# %s\n", l)
		if i > 0 {
			continue
		}
		// under the title, so that a downloaded copy carries them too
		for _, w := range XPKWarnings(p, o) {
			fmt.Fprintf(&b, "# warning: %s\n", w)
		}
	}
	if n := xpkCapacityNote(o); n != "" {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	b.WriteString("# --command has the costed job only: add where it writes (base_output_directory) and what it reads (dataset_type, dataset_path)\n")
	b.WriteString("# the MaxText settings it carries, over base.yml:\n")
	for _, a := range cfg.Args() {
		fmt.Fprintf(&b, "#   %s\n", a)
	}
	b.WriteString("xpk workload create")
	for i := 0; i < len(args); i++ {
		b.WriteString(" \\\n  " + args[i])
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			b.WriteString(" " + shellQuote(args[i+1]))
			i++
		}
	}
	b.WriteString("\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// noImage says what to pass when no image is given, as MaxText documents
// its xpk flow (docs/run_maxtext/run_maxtext_via_xpk.md lines 171-180 and
// 236-245, docs/tutorials/build_maxtext.md @e591f30c). The pre-built
// image that build_maxtext.md lists, tpu_pre_training:0.2.3, is not a
// default: MaxText 0.2.3 (3190805a, 2026-06-12) has no
// ici_context_usp_ulysses_parallelism, which the export writes, and its
// config refuses unknown keys.
const noImage = "xpk's default image is python:3.10, which has no MaxText: pass {docker_image} with an image that has MaxText at e591f30c or later " +
	"(one uploaded with MaxText's src/dependencies/scripts/docker_upload_runner.sh, gcr.io/PROJECT/NAME), " +
	"or {base_docker_image} maxtext_base_image, the local image MaxText's build_maxtext_docker_image makes, " +
	"to which xpk adds the working directory (run xpk in the MaxText checkout)"

// validate checks the options as xpk will, each name by its own rule.
// Its errors name fields as plan options in braces ({reservation},
// {docker_image}), which Error.Phrase spells in the front end's words: the
// CLI's flags, the web's query keys.
func (o XPKOptions) validate() error {
	if err := ValidName("{cluster}", o.Cluster); err != nil {
		return err
	}
	if err := ValidName("{workload}", o.Workload); err != nil {
		return err
	}
	if _, err := ParseCapacity(string(o.Capacity)); err != nil {
		return err
	}
	if o.Reservation != "" {
		if err := ValidReservation("{reservation}", o.Reservation); err != nil {
			return err
		}
	}
	for _, img := range []struct{ field, name string }{{"{docker_image}", o.DockerImage}, {"{base_docker_image}", o.BaseDockerImage}} {
		if img.name != "" {
			if err := ValidImage(img.field, img.name); err != nil {
				return err
			}
		}
	}
	switch {
	case o.Capacity == CapacityReservation && o.Reservation == "":
		return &Error{Target: "xpk", Field: "{capacity}", Value: "reservation", Want: "want {reservation} NAME too", Err: ErrInvalid}
	case o.Capacity != CapacityReservation && o.Reservation != "":
		return &Error{Target: "xpk", Field: "{reservation}", Value: strconv.Quote(o.Reservation), Want: fmt.Sprintf("only with {capacity} reservation, not %q", o.Capacity), Err: ErrInvalid}
	case o.DockerImage != "" && o.BaseDockerImage != "":
		// [xpk] ../core/docker_image.py use_base_docker_image_or_docker_image
		return &Error{Target: "xpk", Field: "{docker_image} and {base_docker_image}", Value: strconv.Quote(o.DockerImage) + " and " + strconv.Quote(o.BaseDockerImage), Want: "want one of them: xpk refuses the two together", Err: ErrInvalid}
	case o.MaxRestarts < 0 || o.MaxRestarts > MaxRestarts:
		return &Error{Target: "xpk", Field: "{max_restarts}", Value: strconv.Itoa(o.MaxRestarts), Want: fmt.Sprintf("want 0 to %d", MaxRestarts), Err: ErrInvalid}
	}
	return nil
}

// XPKArgs are the arguments after `xpk workload create`: each flag
// followed by its value, if it takes one.
func XPKArgs(p plan.Plan, o XPKOptions) ([]string, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	tpu, err := XPKTPUType(p)
	if err != nil {
		return nil, err
	}
	cfg, err := MaxText(p)
	if err != nil {
		return nil, err
	}
	args := []string{"--cluster", o.Cluster, "--workload", o.Workload}
	switch {
	case o.DockerImage != "":
		args = append(args, "--docker-image", o.DockerImage)
	case o.BaseDockerImage != "":
		args = append(args, "--base-docker-image", o.BaseDockerImage)
	default:
		return nil, &Error{Target: "xpk", Field: "docker image", Value: `""`, Want: noImage, Err: ErrInvalid}
	}
	args = append(args, "--tpu-type", tpu, "--num-slices", strconv.Itoa(p.Request.Multislice.Slices))
	switch o.Capacity {
	case CapacityReservation:
		args = append(args, "--reservation", o.Reservation)
	case CapacityDefault:
	default:
		args = append(args, "--"+string(o.Capacity))
	}
	args = append(args, "--max-restarts", strconv.Itoa(o.MaxRestarts))
	cmd := TrainModule + " run_name=" + o.Workload + " " + strings.Join(cfg.Args(), " ")
	return append(args, "--command", cmd), nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
