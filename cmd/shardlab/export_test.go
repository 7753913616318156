package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"shardlab/web"
)

// yamlDocuments decodes a YAML stream document by document, as PyYAML's
// composer walks it, and returns each document's mapping.
func yamlDocuments(t *testing.T, stream string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(stream)))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("the YAML does not parse: %v\n%s", err, stream)
		}
		docs = append(docs, doc)
	}
}

// TestExportWithoutJobIsOneConfig runs each export with no --model,
// --tpu, --mesh or --topology (issue 8 of the review: two YAML documents
// for MaxText, a refusal for PyTorch that did not say which of plan's two
// examples failed). An export is one job's config, what an engine loads:
// MaxText loads its config with OmegaConf.load (src/maxtext/configs/
// pyconfig.py _load_config, AI-Hypercomputer/maxtext@e591f30c line 190),
// which is PyYAML's yaml.load (omegaconf.py OmegaConf.load,
// omry/omegaconf@63b63041), and yaml.load composes a single document,
// raising "expected a single document in the stream" on a second
// (lib/yaml/composer.py get_single_node, yaml/pyyaml@d51d8a13). Each
// export is the default job, llama3-8b on tpu7x-8, as the --model and
// --tpu help say and as the web UI's download with no options is.
func TestExportWithoutJobIsOneConfig(t *testing.T) {
	// the default job, named
	named := []string{"--model", "llama3-8b", "--tpu", "tpu7x-8"}
	for _, args := range [][]string{
		{"export", "maxtext"},
		{"export", "maxtext", "--format", "flags"},
		{"export", "pytorch"},
		{"export", "xpk", "--cluster", "c", "--base-docker-image", "maxtext_base_image"},
	} {
		cmd := strings.Join(args, " ")
		out, errOut, code := runCmd(args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", cmd, code, errOut)
			continue
		}
		want, _, _ := runCmd(append(args, named...)...)
		if out != want {
			t.Errorf("%s: %d bytes, not the %d of the export of %s", cmd, len(out), len(want), strings.Join(named, " "))
		}
		var runs, what int
		switch args[1] {
		case "maxtext":
			if len(args) == 2 {
				docs := yamlDocuments(t, out)
				if len(docs) != 1 || docs[0]["model_name"] != "llama3-8b" || docs[0]["base_config"] != "base.yml" {
					t.Errorf("%s: %d YAML documents, want one, of llama3-8b over base.yml", cmd, len(docs))
				}
				continue
			}
			runs, what = strings.Count(out, "python3 -m maxtext."), 1
		case "pytorch":
			// one program: one mesh, made once
			runs, what = strings.Count(out, "xs.set_global_mesh("), 1
		case "xpk":
			runs, what = strings.Count(out, "xpk workload create"), 1
		}
		if runs != what {
			t.Errorf("%s: %d commands or meshes, want %d", cmd, runs, what)
		}
	}
	// a slice count is of a TPU the user names, as in plan; the refusal
	// speaks of the export's default job, not of plan's examples
	fail(t, []string{"export", "maxtext", "--slices", "2"}, "export maxtext: --slices 2 needs --tpu", "writes the default job, llama3-8b on one tpu7x-8")
	// the web UI's download with no options is the same config
	want, _, _ := runCmd("export", "maxtext")
	rec := httptest.NewRecorder()
	web.New(webTest).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/download/maxtext.yaml", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("GET /download/maxtext.yaml = %d, %d bytes; want export maxtext's %d", rec.Code, rec.Body.Len(), len(want))
	}
}

// TestExportXPKNames: review item 16. Each name is checked by its own
// rule and the error names its own flag and value: a reservation shown
// run together with the image, under three flags' names, told the user
// neither which flag nor which value was wrong.
func TestExportXPKNames(t *testing.T) {
	base := []string{"export", "xpk", "--cluster", "c", "--tpu", "v5p-8"}
	for _, tt := range []struct {
		args []string
		want string // "" to pass
	}{
		{[]string{"--base-docker-image", "x", "--reservation", "r$(id)"}, `shardlab: export: xpk: --reservation "r$(id)"; want a Compute Engine resource name`},
		{[]string{"--base-docker-image", "x", "--reservation", "r;id"}, `shardlab: export: xpk: --reservation "r;id"; want a Compute Engine resource name`},
		{[]string{"--base-docker-image", "x y", "--reservation", "r"}, `shardlab: export: xpk: --base-docker-image "x y"; want an image by Docker's image reference grammar`},
		{[]string{"--docker-image", "gcr.io/p/Img"}, `shardlab: export: xpk: --docker-image "gcr.io/p/Img"; want the repository path in lower-case`},
		{[]string{"--base-docker-image", "x", "--reservation", "projects/my-project/reservations/r"}, ""},
		{[]string{"--docker-image", "us-docker.pkg.dev/p/r/maxtext:1", "--capacity", "reservation", "--reservation", "res-1"}, ""},
	} {
		args := append(append([]string{}, base...), tt.args...)
		out, errOut, code := runCmd(args...)
		switch {
		case tt.want == "" && code != 0:
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
		case tt.want == "":
			// the name is written as given, on its flag
			r := tt.args[len(tt.args)-1]
			if !strings.Contains(out, "  --reservation "+r+" \\\n") {
				t.Errorf("%s: --reservation %s not written", strings.Join(args, " "), r)
			}
		case code != 2 || !strings.HasPrefix(errOut, tt.want) || out != "":
			t.Errorf("%s: exit %d, stderr %q, %d bytes out; want exit 2, %q…, nothing out", strings.Join(args, " "), code, errOut, len(out), tt.want)
		}
	}
}

// TestExportNamesCalibration: export took --temp-scale (or --calibration)
// and wrote a config whose layout and batch it may have changed, without
// saying so anywhere. Now stderr names it as plan does; without one,
// stderr stays empty.
func TestExportNamesCalibration(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8"}
	for _, target := range []string{"maxtext", "xpk", "pytorch"} {
		args := append([]string{"export", target}, job...)
		if target == "xpk" {
			args = append(args, "--cluster", "c", "--base-docker-image", "maxtext_base_image")
		}
		out, errOut, code := runCmd(append(args, "--temp-scale", "1.5")...)
		want := "export " + target + ": Calibration: --temp-scale 1.5 scales"
		if code != 0 || out == "" || !strings.HasPrefix(errOut, want) {
			t.Errorf("%v --temp-scale 1.5: exit %d, stderr %q, want it to start %q", args, code, errOut, want)
		}
		if _, errOut, code := runCmd(args...); code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q, want none", args, code, errOut)
		}
	}
}

// TestExportXPKWarnsOfVMs: v5litepod-8 is one ct5lp-hightpu-8t VM
// (cloud.google.com/tpu/docs/v5e), which the plan costs, but xpk
// @367c8382 makes it two ct5lp-hightpu-4t VMs (export.XPKWarnings):
// export xpk writes the command and says so on stderr; on v6e-8, which
// xpk makes of the two ct6e-standard-4t VMs the plan costs, stderr stays
// empty.
func TestExportXPKWarnsOfVMs(t *testing.T) {
	for _, c := range []struct{ tpu, want string }{
		{"v5litepod-8", "export xpk: warning: xpk (AI-Hypercomputer/xpk@367c8382) makes v5litepod-8 of 2 ct5lp-hightpu-4t VMs of 4 chips each, where the plan has 1 ct5lp-hightpu-8t VM of 8 chips: the host count (2, not 1)"},
		{"v6e-8", ""},
	} {
		args := []string{"export", "xpk", "--model", "gemma-2b", "--tpu", c.tpu, "--cluster", "c", "--base-docker-image", "maxtext_base_image"}
		out, errOut, code := runCmd(args...)
		if code != 0 || !strings.Contains(out, "--tpu-type") || !strings.HasPrefix(errOut, c.want) || (c.want == "") != (errOut == "") {
			t.Errorf("shardlab %s: exit %d, stderr %q, want it to start %q", strings.Join(args, " "), code, errOut, c.want)
		}
		// the script carries it too, under its title, for a copy kept
		lines := strings.SplitN(out, "\n", 3)
		if want := strings.TrimPrefix(c.want, "export xpk: "); len(lines) < 3 || !strings.HasPrefix(lines[0], "# shardlab plan: ") ||
			strings.HasPrefix(lines[1], "# warning: ") != (want != "") || !strings.HasPrefix(lines[1], "# "+want) || strings.Count(out, "# warning: ") != min(1, len(want)) {
			t.Errorf("shardlab %s: stdout starts %q, want its second line to start %q", strings.Join(args, " "), out[:min(len(out), 300)], "# "+want)
		}
	}
}

// TestExportXPKCapacity: review 140 #5 and 145 #1. export xpk --capacity
// flex says GKE's flex-start run limit, "for up to seven days" (GKE's
// flex-start page, modes.csv) on stderr and in its header, for TPU7x and
// multi-host slices as for any: xpk @367c8382 runs Ironwood flex-start
// recipes, multi-host included (README.md line 40;
// docs/usage/tpu7x/recipes/flex_filestore_recipe.md line 34, "For
// **multi-host** provisioning use an ACCELERATOR_TYPE with ... more than 8
// chips, e.g. tpu7x-2x2x2 or tpu7x-16", and 69-76, xpk cluster create
// --tpu-type=${ACCELERATOR_TYPE} --flex; src/xpk/core/capacity.py
// 137-144), so no warning of a zone list (the queued-resources API's, for
// TPU VMs) nor of host counts. --capacity spot with no restarts warns that
// the first preemption ends the workload, "(xpk's default)" only where
// --max-restarts was left out (review 145 #4). Every capacity flag
// carries the note that xpk reads it only under node auto-provisioning.
// The page's xpk download is the same file.
func TestExportXPKCapacity(t *testing.T) {
	const gkeLimit = "--flex: flex-start on GKE provisions the TPUs for at most 7 days a request (https://cloud.google.com/kubernetes-engine/docs/concepts/dws, read 2026-12-07)"
	h := web.New(webTest)
	for _, c := range []struct {
		tpu, capacity, restarts string
		warnings                []string // each the start of one stderr line after "export xpk: warning: "
	}{
		{"tpu7x-16", "flex", "", []string{gkeLimit}},
		{"tpu7x-128", "flex", "", []string{gkeLimit}},
		{"v6e-4", "flex", "", []string{gkeLimit}},
		// GKE's flex-start page: "TPU v3 and v4 are not supported" (review 149 #2)
		{"v4-8", "flex", "", []string{"--flex: flex-start on GKE does not support TPU v4 (https://cloud.google.com/kubernetes-engine/docs/concepts/dws, read 2026-12-07)"}},
		{"v6e-4", "spot", "", []string{"--spot with --max-restarts 0 (xpk's default): the JobSet is never restarted"}},
		{"v6e-4", "spot", "0", []string{"--spot with --max-restarts 0 (given): the JobSet is never restarted"}},
		{"v6e-4", "spot", "3", nil},
		{"v6e-4", "on-demand", "", nil},
	} {
		job := []string{"--model", "gemma-2b", "--tpu", c.tpu, "--cluster", "c", "--workload", "w", "--base-docker-image", "img", "--capacity", c.capacity}
		query := "/download/xpk.sh?model=gemma-2b&tpu=" + c.tpu + "&cluster=c&workload=w&base_docker_image=img&capacity=" + c.capacity
		if c.restarts != "" {
			job = append(job, "--max-restarts", c.restarts)
			query += "&max_restarts=" + c.restarts
		}
		args := append([]string{"export", "xpk"}, job...)
		out, errOut, code := runCmd(args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if errOut == "" {
			lines = nil
		}
		ok := code == 0 && len(lines) == len(c.warnings)
		for i := 0; ok && i < len(lines); i++ {
			ok = strings.HasPrefix(lines[i], "export xpk: warning: "+c.warnings[i]) &&
				strings.Contains(out, "\n# "+strings.TrimPrefix(lines[i], "export xpk: ")+"\n")
		}
		if note := "\n# --" + c.capacity + " acts only on a cluster with node auto-provisioning"; !ok || !strings.Contains(out, note) || !strings.Contains(out, "  --"+c.capacity+" \\\n") {
			t.Errorf("%v: exit %d, stderr %q; want the warnings %q on stderr and in the header, with %q and the flag:\n%.800s", args, code, errOut, c.warnings, note, out)
		}
		downloadIsCommand(t, h, query, args)
	}
}

// TestExportPyTorchRefusesInItsOwnWords (review 159): export pytorch
// plans under the PyTorch framework itself and takes no --framework, so
// the refusals of what its script does not write name the command, the
// flag and the value, and never tell the user of a --framework pytorch
// they did not give (before: "--model (experts 8) with --framework
// pytorch, want a dense model"); plan --framework pytorch, where the user
// gave the flag, still says it.
func TestExportPyTorchRefusesInItsOwnWords(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--model", "mixtral-8x7b"}, "--model (experts 8): export pytorch takes a dense model (no experts): mixtral-8x7b"},
		{[]string{"--model", "gemma2-9b"}, "--attention (attention flash): export pytorch takes dot_product for gemma2-9b"},
		{[]string{"--model", "llama3-8b", "--remat", "minimal"}, "--remat (remat minimal): export pytorch takes none or full"},
		{[]string{"--model", "llama3-8b", "--mesh", "fsdp=16,pipeline=2"}, "--mesh (pipeline 2): export pytorch takes a layout of data, fsdp and tensor only"},
		{[]string{"--model", "llama3-8b", "--mesh", "fsdp=32", "--global-batch", "64", "--gradient-accumulation-steps", "2"},
			"--gradient-accumulation-steps (gradient accumulation steps 2): export pytorch takes 0 or 1"},
	} {
		args := append([]string{"export", "pytorch", "--tpu", "v5p-64"}, c.flags...)
		fail(t, args, "shardlab: export pytorch: "+c.want)
		if _, errOut, _ := runCmd(args...); strings.Contains(errOut, "--framework pytorch") {
			t.Errorf("shardlab %s: %q names a --framework export pytorch does not take", strings.Join(args, " "), errOut)
		}
		planArgs := append([]string{"plan", "--framework", "pytorch", "--tpu", "v5p-64"}, c.flags...)
		fail(t, planArgs, "with --framework pytorch, want ")
	}
}
