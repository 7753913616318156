package export

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/plan"
)

// TestXPKFlagsAreXPKs: every flag the export writes is one `xpk workload
// create` defines, its --tpu-type one xpk accepts, and its --command the
// MaxText trainer with the plan's settings. It is over 80 lines because
// it checks the three against three lists, one after the other.
func TestXPKFlagsAreXPKs(t *testing.T) {
	flags := readList(t, "testdata/xpk-workload-create-flags.txt")
	keys := readList(t, "testdata/maxtext-base-keys.txt")
	types := map[string]bool{} // the first word of each line; the VMs follow
	for l := range readList(t, "xpk-tpu-types.txt") {
		types[strings.Fields(l)[0]] = true
	}
	opts := []XPKOptions{
		{Cluster: "c", Workload: "w", BaseDockerImage: "maxtext_base_image"},
		{Cluster: "my-cluster", Workload: "llama-70b", DockerImage: "gcr.io/p/maxtext:latest", Capacity: CapacityReservation, Reservation: "res-1", MaxRestarts: 5},
		{Cluster: "c", Workload: "w", DockerImage: "gcr.io/p/maxtext", Capacity: CapacitySpot},
		{Cluster: "c", Workload: "w", BaseDockerImage: "maxtext_base_image", Capacity: CapacityOnDemand},
		{Cluster: "c", Workload: "w", DockerImage: "us-docker.pkg.dev/p/r/maxtext:1", Capacity: CapacityFlex},
	}
	for i, tt := range exportCases {
		p := search(t, tt.edit)
		o := opts[i%len(opts)]
		args, err := XPKArgs(p, o)
		if g := p.Request.Multislice.Slice.Chip.Generation; g == hw.V2 || g == hw.V3 {
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "GKE does not offer") {
				t.Errorf("%s: XPKArgs error %v, want ErrUnsupported: xpk has no %s", tt.name, err, g)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := map[string]string{}
		for j := 0; j < len(args); j++ {
			f := args[j]
			if !strings.HasPrefix(f, "--") || !flags[f] {
				t.Errorf("%s: %q is not a flag of xpk workload create", tt.name, f)
				continue
			}
			if j+1 < len(args) && !strings.HasPrefix(args[j+1], "--") {
				got[f] = args[j+1]
				j++
			} else {
				got[f] = ""
			}
		}
		if !types[got["--tpu-type"]] {
			t.Errorf("%s: --tpu-type %q is not one xpk accepts", tt.name, got["--tpu-type"])
		}
		if want := p.Request.Multislice.Slice.Chip.AcceleratorPrefix + "-" + p.Request.Multislice.Slice.Topology.String(); got["--tpu-type"] != want {
			t.Errorf("%s: --tpu-type %q, want the topology form %q", tt.name, got["--tpu-type"], want)
		}
		// the image that has MaxText: one of xpk's two image flags, never
		// both (xpk exits on the two together), never neither (python:3.10)
		if got["--docker-image"] != o.DockerImage || got["--base-docker-image"] != o.BaseDockerImage || (got["--docker-image"] == "") == (got["--base-docker-image"] == "") {
			t.Errorf("%s: --docker-image %q and --base-docker-image %q for options %+v, want exactly one", tt.name, got["--docker-image"], got["--base-docker-image"], o)
		}
		if got["--num-slices"] != strconv.Itoa(p.Request.Multislice.Slices) || got["--cluster"] != o.Cluster || got["--workload"] != o.Workload ||
			got["--max-restarts"] != strconv.Itoa(o.MaxRestarts) {
			t.Errorf("%s: args %q do not carry the slices and options %+v", tt.name, args, o)
		}
		capacity := 0
		for _, c := range Capacities() {
			if _, ok := got["--"+string(c)]; ok {
				capacity++
				if c != o.Capacity || c == CapacityReservation && got["--reservation"] != o.Reservation {
					t.Errorf("%s: --%s written for capacity %q", tt.name, c, o.Capacity)
				}
			}
		}
		if want := min(len(o.Capacity), 1); capacity != want {
			t.Errorf("%s: %d capacity flags for capacity %q, want %d", tt.name, capacity, o.Capacity, want)
		}
		cfg, err := MaxText(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := TrainModule + " run_name=" + o.Workload + " " + strings.Join(cfg.Args(), " "); got["--command"] != want {
			t.Errorf("%s: --command %q,\nwant %q", tt.name, got["--command"], want)
		}
		for _, a := range strings.Fields(strings.TrimPrefix(got["--command"], TrainModule)) {
			if k, _, _ := strings.Cut(a, "="); !keys[k] {
				t.Errorf("%s: --command sets %q, which is not in MaxText's base.yml", tt.name, k)
			}
		}
		var b strings.Builder
		if err := XPK(&b, p, o); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "xpk workload create \\\n") || !strings.Contains(b.String(), "--command '"+got["--command"]+"'\n") {
			t.Errorf("%s: the shell command does not quote --command:\n%s", tt.name, b.String())
		}
		// it prints the MaxText settings it carries, one a line
		for _, a := range cfg.Args() {
			if !strings.Contains(b.String(), "\n#   "+a+"\n") {
				t.Errorf("%s: the MaxText setting %s is not printed", tt.name, a)
			}
		}
	}
}

func TestXPKRefuses(t *testing.T) {
	p := search(t, exportCases[4].edit) // v5p
	ok := XPKOptions{Cluster: "c", Workload: "w", DockerImage: "gcr.io/p/maxtext"}
	for _, tt := range []struct {
		name string
		edit func(*XPKOptions)
		want []string
	}{
		{"no cluster", func(o *XPKOptions) { o.Cluster = "" }, []string{"--cluster", `""`}},
		{"bad workload", func(o *XPKOptions) { o.Workload = "Llama_70B" }, []string{"--workload", `"Llama_70B"`, "lower-case"}},
		{"long workload", func(o *XPKOptions) { o.Workload = strings.Repeat("a", 41) }, []string{"--workload", "40"}},
		{"bad capacity", func(o *XPKOptions) { o.Capacity = "preemptible" }, []string{"capacity", `"preemptible"`, "reservation, spot, on-demand, flex"}},
		{"reservation unnamed", func(o *XPKOptions) { o.Capacity = CapacityReservation }, []string{"--capacity reservation", "--reservation NAME"}},
		{"reservation with spot", func(o *XPKOptions) { o.Capacity, o.Reservation = CapacitySpot, "r" }, []string{"--reservation", `"spot"`}},
		{"shell in image", func(o *XPKOptions) { o.DockerImage = "img; rm -rf /" }, []string{"--docker-image", `"img; rm -rf /"`, "Docker's image reference"}},
		{"shell in base image", func(o *XPKOptions) { o.DockerImage, o.BaseDockerImage = "", "img`x`" }, []string{"--base-docker-image", "\"img`x`\"", "Docker's image reference"}},
		// review item 16: the reservation alone, named by its flag, not
		// run together with the image
		{"shell in reservation", func(o *XPKOptions) {
			o.Capacity, o.Reservation, o.DockerImage, o.BaseDockerImage = CapacityReservation, "r$(id)", "", "x"
		},
			[]string{"--reservation \"r$(id)\";", "Compute Engine"}},
		{"semicolon in reservation", func(o *XPKOptions) { o.Capacity, o.Reservation = CapacityReservation, "r;id" }, []string{"--reservation \"r;id\";", "lower-case letters, digits and hyphens"}},
		{"upper-case image", func(o *XPKOptions) { o.DockerImage = "gcr.io/p/MaxText" }, []string{"--docker-image \"gcr.io/p/MaxText\";", "lower-case"}},
		// xpk's default image, python:3.10, has no MaxText
		{"no image", func(o *XPKOptions) { o.DockerImage = "" }, []string{"python:3.10", "--docker-image", "--base-docker-image maxtext_base_image", "docker_upload_runner.sh"}},
		{"both images", func(o *XPKOptions) { o.BaseDockerImage = "maxtext_base_image" }, []string{"--docker-image and --base-docker-image", "one of them"}},
		{"negative restarts", func(o *XPKOptions) { o.MaxRestarts = -1 }, []string{"--max-restarts", "-1"}},
		{"too many restarts", func(o *XPKOptions) { o.MaxRestarts = MaxRestarts + 1 }, []string{"--max-restarts", "1001", "want 0 to 1000"}},
	} {
		o := ok
		tt.edit(&o)
		_, err := XPKArgs(p, o)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", tt.name, err)
			continue
		}
		// a library error names fields, which each front end spells: the
		// CLI as its flags (here), the web as its query keys
		var xe *Error
		if !errors.As(err, &xe) {
			t.Errorf("%s: error %v, want an *Error", tt.name, err)
			continue
		}
		if strings.Contains(err.Error(), "--") {
			t.Errorf("%s: error %q names a CLI flag, want fields", tt.name, err)
		}
		for _, w := range tt.want {
			if got := xe.Phrase(plan.Option.Flag); !strings.Contains(got, w) {
				t.Errorf("%s: error spelt with flags %q lacks %q", tt.name, got, w)
			}
		}
		// the reservation's own value, not the image's with it
		if tt.name == "shell in reservation" && strings.Contains(err.Error(), "image") {
			t.Errorf("%s: error %q names the image", tt.name, err)
		}
	}
	if _, err := XPKArgs(p, ok); err != nil {
		t.Errorf("XPKArgs(%+v) = %v", ok, err)
	}
	// xpk lists TPU7x shapes with dimensions in increasing order
	// (generate_tpu_topologies); the error names the one to plan with
	turned := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Topology = "llama3-8b", "tpu7x-128", "8x4x4" })
	// it names the option ({topology}), which the CLI spells as its flag
	_, err := XPKArgs(turned, ok)
	var xe *Error
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &xe) || !strings.Contains(err.Error(), "tpu7x-8x4x4") ||
		!strings.Contains(err.Error(), "plan with topology 4x4x8") || !strings.Contains(xe.Phrase(plan.Option.Flag), "--topology 4x4x8") {
		t.Errorf("XPKArgs on tpu7x 8x4x4 = %v, want ErrUnsupported naming the topology option, 4x4x8", err)
	}
	xpkTooSmall(t, ok)
}

// xpkTooSmall: a slice of fewer chips than any xpk type of its generation
// (v5e-4: xpk's v5litepod types are 2x4 to 16x16,
// [xpk-sc] line 831 supported_topologies) is refused naming the chip
// counts xpk takes and its smallest type, as the {tpu} option spells it
// (review170 S2).
func xpkTooSmall(t *testing.T, ok XPKOptions) {
	t.Helper()
	small := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Precision = "gemma-2b", "v5e-4", "bf16" })
	_, err := XPKArgs(small, ok)
	var xe *Error
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &xe) {
		t.Fatalf("XPKArgs on v5e-4 = %v, want an *Error wrapping ErrUnsupported", err)
	}
	got := xe.Phrase(plan.Option.Flag)
	for _, w := range []string{"--tpu-type v5litepod-2x2;", "no v5litepod type of 4 chips", "only of 8, 16, 32, 64, 128 or 256 chips", "plan with --tpu v5litepod-8 (2x4), its smallest"} {
		if !strings.Contains(got, w) {
			t.Errorf("XPKArgs on v5e-4: %q lacks %q", got, w)
		}
	}
	if strings.Contains(got, "of that name") {
		t.Errorf("XPKArgs on v5e-4: %q, want it without 'of that name'", got)
	}
}

func FuzzParseCapacity(f *testing.F) {
	for _, s := range []string{"", "spot", "ON-DEMAND", " flex ", "reservation", "preemptible", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCapacity(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Errorf("ParseCapacity(%q) error %q does not name the value", s, err)
			}
			return
		}
		if again, err := ParseCapacity(string(c)); err != nil || again != c {
			t.Errorf("ParseCapacity(%q) = %q, which reads back as %q, %v", s, c, again, err)
		}
	})
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"a", "my-cluster", "a-", "-a", "A", strings.Repeat("a", 40), strings.Repeat("a", 41), "a'b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidName("--cluster", s)
		// xpk's name_type, spelt out a second way
		valid := len(s) >= 1 && len(s) <= 40 && s[0] >= 'a' && s[0] <= 'z' && s[len(s)-1] != '-'
		for _, r := range s {
			valid = valid && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
		}
		if valid != (err == nil) {
			t.Errorf("ValidName(%q) = %v, want valid %v", s, err, valid)
		}
		if err == nil && shellQuote(s) != s {
			t.Errorf("valid name %q needs shell quoting", s)
		}
	})
}

// TestValidReservation holds --reservation to the names xpk reads
// ([xpk] ../core/reservation.py _try_parse_reservation: a reservation,
// under projects/PROJECT/reservations/ when another project's, with
// /reservationBlocks/BLOCK and /reservationSubBlocks/SUB_BLOCK after it),
// each a Compute Engine resource name (Compute Engine API v1,
// Reservation.name: 1-63 characters matching [a-z]([-a-z0-9]*[a-z0-9])?)
// and the project an ID (Resource Manager, Project.projectId: 6 to 30
// lower-case letters, digits or hyphens, starting with a letter, not
// ending with a hyphen).
func TestValidReservation(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" if valid, else what the error says
	}{
		{"res-1", ""},
		{"a", ""},
		{strings.Repeat("a", 63), ""},
		{"projects/my-project/reservations/res-1", ""},
		{"res-1/reservationBlocks/block-7", ""},
		{"projects/my-project/reservations/res-1/reservationBlocks/b1/reservationSubBlocks/s2", ""},
		{strings.Repeat("a", 64), "at most 63"},
		{"r;id", `"r;id"`},
		{"r$(id)", `"r$(id)"`},
		{"Res-1", `"Res-1"`},
		{"res-", `"res-"`},
		{"1res", `"1res"`},
		{"res_1", `"res_1"`},
		{"", `""`},
		// xpk's workload create takes one (NAP: "only support a single
		// reservation", [xpk] ../core/nap.py)
		{"a,b", `"a,b"`},
		{"projects/p/reservations/res-1", `project "p"`},
		{"projects/my-project-/reservations/res-1", `project "my-project-"`},
		{"projects/my-project/res-1", "projects/PROJECT/reservations/NAME"},
		{"res-1/reservationBlocks/Block", `block "Block"`},
		{"res-1/reservationBlocks/b1/reservationSubBlocks/", `sub-block ""`},
		{"res-1/blocks/b1", "projects/PROJECT/reservations/NAME"},
	} {
		err := ValidReservation("--reservation", tt.in)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidReservation(%q) = %v, want nil", tt.in, err)
		case tt.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--reservation "+strconv.Quote(tt.in)) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ValidReservation(%q) = %v, want ErrInvalid naming --reservation %q and %q", tt.in, err, tt.in, tt.want)
		}
	}
}

// TestValidImage holds --docker-image and --base-docker-image to Docker's
// image reference grammar, which xpk hands them to (the JobSet's image,
// or docker buildx build FROM / crane mutate, [xpk] ../core/docker_image.py):
// cases from distribution/reference's own TestReferenceParse
// (reference_test.go @0965666a), and the digests the OCI image spec
// registers (descriptor.md: sha256 64, sha512 128 lower-case hex digits).
func TestValidImage(t *testing.T) {
	sha256 := "sha256:" + strings.Repeat("f", 64)
	for _, tt := range []struct {
		in    string
		valid bool
	}{
		{"maxtext_base_image", true},
		{"test_com", true},
		{"test.com:tag", true},
		{"test.com:5000", true},
		{"test:5000/repo", true},
		{"test:5000/repo:tag@" + sha256, true},
		{"lowercase:Uppercase", true},
		{strings.Repeat("a/", 127) + "a:tag-puts-this-over-max", true},
		{"sub-dom1.foo.com/bar/baz/quux:some-long-tag", true},
		{"b.gcr.io/test.example.com/my-app:test.example.com", true},
		{"xn--n3h.com/myimage:xn--n3h.com", true},
		{"[2001:db8::1]:5000/repo", true},
		{"gcr.io/p/maxtext@sha512:" + strings.Repeat("0", 128), true},
		{"", false},
		{":justtag", false},
		{"@" + sha256, false},
		{"repo@sha256:" + strings.Repeat("f", 34), false},
		{"validname@invaliddigest:" + strings.Repeat("f", 64), false},
		{"Uppercase:tag", false},
		{"test:5000/Uppercase/lowercase:tag", false},
		{"domain/" + strings.Repeat("a", 256) + ":tag", false},
		{"aa/asdf$$^/aa", false},
		{"registry/画像:v1", false},
		{"img:" + strings.Repeat("t", 129), false},
		{"repo@sha256:" + strings.Repeat("F", 64), false},
	} {
		err := ValidImage("--docker-image", tt.in)
		if (err == nil) != tt.valid {
			t.Errorf("ValidImage(%q) = %v, want valid %v", tt.in, err, tt.valid)
		}
		if err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--docker-image "+strconv.Quote(tt.in))) {
			t.Errorf("ValidImage(%q) = %v, want ErrInvalid naming --docker-image and the value", tt.in, err)
		}
	}
}

func FuzzValidReservation(f *testing.F) {
	for _, s := range []string{"res-1", "r;id", "projects/my-project/reservations/r", "r/reservationBlocks/b", "A", "a-", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidReservation("--reservation", s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Errorf("ValidReservation(%q) error %q does not name the value", s, err)
			}
			return
		}
		// a valid path is resource names and IDs joined by /: nothing a
		// shell reads, since xpk runs it in one unquoted
		if shellQuote(s) != s {
			t.Errorf("valid reservation %q needs shell quoting", s)
		}
	})
}

func FuzzValidImage(f *testing.F) {
	for _, s := range []string{"maxtext_base_image", "gcr.io/p/m:1", "a@sha256:" + strings.Repeat("a", 64), "A", "a b", "a;b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidImage("--base-docker-image", s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Errorf("ValidImage(%q) error %q does not name the value", s, err)
			}
			return
		}
		// the grammar's characters: none a shell runs
		if strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?!~#{}") {
			t.Errorf("valid image %q has a shell character", s)
		}
	})
}

// TestXPKTPUVMs: the VMs the embedded list gives a few TPU types match
// AI-Hypercomputer/xpk src/xpk/core/system_characteristics.py @367c8382
// read by hand: v6e's 1x1 on machine_type='ct6e-standard-1t' (lines
// 697-705) and 2x2 and 2x4 on 'ct6e-standard-4t' (706-716),
// v5litepod's 2x4 on 'ct5lp-hightpu-4t' (825-833), tpu7x's on
// 'tpu7x-standard-4t', chips_per_vm 4 but for a 1-chip topology and
// vms_per_slice the chips over it (compute_chips_per_vm,
// compute_vms_per_slice).
func TestXPKTPUVMs(t *testing.T) {
	for name, want := range map[string]xpkVMs{
		"v6e-1x1":       {"ct6e-standard-1t", 1, 1},
		"v6e-4":         {"ct6e-standard-4t", 4, 1},
		"v6e-2x4":       {"ct6e-standard-4t", 4, 2},
		"v6e-16x16":     {"ct6e-standard-4t", 4, 64},
		"v5litepod-2x4": {"ct5lp-hightpu-4t", 4, 2},
		"tpu7x-4x4x8":   {"tpu7x-standard-4t", 4, 32},
		"v5p-2x2x1":     {"ct5p-hightpu-4t", 4, 1},
	} {
		if got, ok := xpkTPUTypes[name]; !ok || got != want {
			t.Errorf("xpk %s: %+v (listed %v), want %+v", name, got, ok, want)
		}
	}
}

// TestXPKWarnings: where xpk makes the slice of other VMs than the plan
// has (hw.Slice.Host), the export warns, naming both and xpk's commit.
// v5litepod-8 is one ct5lp-hightpu-8t (cloud.google.com/tpu/docs/v5e),
// but xpk @367c8382 makes it two 4-chip VMs (TestXPKTPUVMs): 2 hosts, not
// 1, and another VM for the input check (each chip's DCN share, which the
// collectives are costed on, is the same: not named). Slices xpk makes as the
// plan does warn of nothing: v6e-8, which training plans cost as the two
// ct6e-standard-4t VMs xpk makes it of (hw's catalog), and v6e-1, one
// ct6e-standard-1t by the v6e doc and by xpk (review 128 #9: the plan had a
// 4-chip ct6e-standard-4t and this warned), among them.
func TestXPKWarnings(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		want       string // "" for none
	}{
		{"gemma-2b", "v5litepod-8", "xpk (AI-Hypercomputer/xpk@367c8382) makes v5litepod-8 of 2 ct5lp-hightpu-4t VMs of 4 chips each, where the plan has 1 ct5lp-hightpu-8t VM of 8 chips: " +
			"the host count (2, not 1) and the VM the plan's input check simulates (infeed) differ from what runs"},
		{"llama3-8b", "v6e-8", ""},
		{"llama3-8b", "v5litepod-16", ""},
		{"llama3-8b", "v6e-16", ""},
		{"gemma-2b", "v6e-4", ""},
		{"llama3-8b", "tpu7x-8", ""},
		{"llama3-8b", "v5p-8", ""},
	} {
		p := search(t, func(o *plan.Options) { o.Model, o.TPU = c.model, c.tpu })
		got := strings.Join(XPKWarnings(p, XPKOptions{}), "\n")
		if got != c.want {
			t.Errorf("XPKWarnings(%s on %s) = %q, want %q", c.model, c.tpu, got, c.want)
		}
	}
	// gemma-2b fits one v6e chip in bf16 (not at the default precision: the plan says so)
	p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Precision = "gemma-2b", "v6e-1", "bf16" })
	if got := XPKWarnings(p, XPKOptions{}); len(got) != 0 {
		t.Errorf("XPKWarnings(gemma-2b bf16 on v6e-1) = %q, want none", got)
	}
}

// TestXPKCapacity: review 140 #5. xpk @367c8382 reads the capacity flags
// only on a cluster with node auto-provisioning (parser/workload.py
// 88-93, "Optional Autoprovisioning Arguments"; commands/workload.py
// 475-487): the header says so wherever one is written. The terms the
// front end gives (budget's) are warnings after their flag, and Spot with
// xpk's default --max-restarts 0 (parser/workload.py 621-628, "Defaults
// to 0") warns that the first preemption ends the workload; 3 restarts,
// or on-demand, do not.
func TestXPKCapacity(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v5p-8" })
	base := XPKOptions{Cluster: "c", Workload: "w", BaseDockerImage: "maxtext_base_image"}
	for _, c := range []struct {
		capacity Capacity
		restarts int
		terms    []string
		warnings []string // each a substring of one warning, in order
	}{
		{CapacityDefault, 0, nil, nil},
		{CapacitySpot, 0, nil, []string{"--spot with --max-restarts 0 (xpk's default): the JobSet is never restarted, so the first preemption"}},
		{CapacitySpot, 3, nil, nil},
		{CapacityOnDemand, 0, nil, nil},
		{CapacityFlex, 0, []string{"not offered here", "nor there"}, []string{"--flex: not offered here", "--flex: nor there"}},
	} {
		o := base
		o.Capacity, o.MaxRestarts, o.CapacityWarnings = c.capacity, c.restarts, c.terms
		got := XPKWarnings(p, o)
		ok := len(got) == len(c.warnings)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], c.warnings[i])
		}
		if !ok {
			t.Errorf("XPKWarnings(%s, %d restarts, terms %q) = %q, want %q", c.capacity, c.restarts, c.terms, got, c.warnings)
		}
		// as xpk's parser takes them (parser/workload.py 621-628,
		// 779-820): --spot, --flex and --on-demand are store_true, no value
		// after them; --max-restarts a value (type str, read as the
		// JobSet's int32 maxRestarts)
		args, err := XPKArgs(p, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range args {
			switch {
			case a == "--"+string(c.capacity) && c.capacity != CapacityDefault && (i+1 == len(args) || !strings.HasPrefix(args[i+1], "--")):
				t.Errorf("%s: %s takes no value in xpk, but %q follows it", c.capacity, a, args[min(i+1, len(args)-1)])
			case a == "--max-restarts" && (i+1 == len(args) || args[i+1] != strconv.Itoa(c.restarts)):
				t.Errorf("%s: --max-restarts not followed by %d: %q", c.capacity, c.restarts, args[i:])
			}
		}
		var b strings.Builder
		if err := XPK(&b, p, o); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, w := range got {
			if !strings.Contains(out, "\n# warning: "+w+"\n") {
				t.Errorf("%s: the header lacks the warning %q:\n%.600s", c.capacity, w, out)
			}
		}
		note := "# --" + string(c.capacity) + " acts only on a cluster with node auto-provisioning"
		if has := strings.Contains(out, note); has != (c.capacity != CapacityDefault) || strings.Contains(out, "auto-provisioning") != has {
			t.Errorf("%s: header says %q: %v, want it wherever a capacity flag is written:\n%.600s", c.capacity, note, has, out)
		}
	}
}
