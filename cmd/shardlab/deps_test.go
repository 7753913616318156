package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// layers is the dependency table of /work/shared/ARCHITECTURE.md ("depends
// on"), by package path under the module. A package may import what its row
// names and, transitively, what those rows allow (mesh may use unit because
// hw does); a package missing from the table fails the test, so a new one
// comes with its row.
var layers = map[string][]string{
	"unit":                      nil,
	"schema":                    nil, // not in ARCHITECTURE.md: the one version of every JSON document (issue 28), at the bottom so any renderer may use it
	"hw":                        {"unit", "internal/enum"},
	"model":                     nil,
	"mesh":                      {"hw", "collective"}, // collective beyond ARCHITECTURE.md: mesh.Link.Collective, the one conversion of a placed link
	"collective":                {"hw", "unit"},
	"schedule":                  nil,
	"systolic":                  {"hw"},
	"infeed":                    {"hw", "internal/braces"},                                                         // internal/braces: ConfigError names its fields as {key}, which the CLI spells as flags (review171)
	"cost":                      {"hw", "model", "mesh", "collective", "schedule", "systolic", "internal/errtext"}, // internal/errtext: OrList, the words of a list of choices
	"plan":                      {"cost", "infeed", "schema", "maxtext", "internal/braces", "internal/errtext"},    // schema beyond ARCHITECTURE.md: plan writes its JSON with the version every document carries; maxtext: the {mesh} option counts JAX devices by MaxText's in-chip rule (issue 28)
	"validate":                  {"plan", "cost", "inference", "maxtext"},
	"capacity":                  {"hw", "plan"},
	"budget":                    {"plan", "capacity"},
	"inference":                 {"hw", "model", "collective", "mesh", "internal/braces", "internal/errtext", "internal/accept"}, // mesh beyond ARCHITECTURE.md: only mesh places a tensor ring on the torus; internal/errtext: its length-mix error quotes the mix's own words; internal/accept: the serving options' ranges (Accepts)
	"maxtext":                   {"mesh", "model", "internal/errtext"},                                                           // internal/errtext: OrList, the words of a list of choices
	"export":                    {"plan", "inference", "maxtext"},
	"chart":                     {"plan", "budget", "inference", "internal/errtext"},              // not in ARCHITECTURE.md: the charts of issue 14, drawn once for web and the CLI; budget's time against dollars (issue 31); serving latency and throughput against concurrency (issue 32)
	"web":                       {"plan", "capacity", "inference", "export", "chart", "validate"}, // validate beyond ARCHITECTURE.md: the plan page shows validate's published runs of the plan's job beside the pick (review 163 #3; plan cannot ask, validate imports it)
	"emu":                       {"mesh", "collective", "schedule", "emu/fabric", "emu/kernel"},
	"emu/fabric":                {"mesh", "collective"},
	"emu/kernel":                nil,
	"emu/kernel/openblas":       nil, // part of emu/kernel in ARCHITECTURE.md: OpenBLAS's cgo, apart from the kernel's Go assembly
	"emu/mpi":                   {"emu/fabric"},
	"trace":                     nil,
	"internal/golden":           nil,
	"internal/enum":             nil, // not in ARCHITECTURE.md: one generic name table for small integer types (issue 30), under hw so that hw.NameCount, mesh.Axis and capacity's modes share it
	"internal/braces":           nil, // not in ARCHITECTURE.md: the {key} markup of notes (issue 30), under plan and inference so that both spell their options with one reader
	"internal/accept":           nil, // not in ARCHITECTURE.md: the words of a numeric option's accepted range, one text for the CLI's flags and the web forms (review171)
	"internal/errtext":          nil, // not in ARCHITECTURE.md: a library error's own words, without its package's name and sentinel, for plan's and inference's option errors and cmd (review 140)
	"internal/cputime":          nil, // test helper: the process's CPU time for the benchmarks
	"collective/collectivetest": {"collective"},
	"cmd/shardlab":              {"*"},
}

// layerExceptions are imports the table does not list but the code has,
// each with its reason. Keep it short: fix the code or the table instead
// where either is wrong.
var layerExceptions = map[[2]string]string{
	{"systolic", "trace"}: "the systolic simulator writes its cycle trace with trace, which the layout section shares " +
		"between the simulators; the table's systolic row predates it",
	{"emu/fabric", "emu/kernel"}: "the fabric sums what it receives with the kernel's vector sums (Add, SumBoth, " +
		"ReduceFan in assembly), the same bits as the training's; ARCHITECTURE.md's row names only its layout's packages",
}

// thirdParty is every module outside the standard library a package may
// import: the default build stays pure Go with few dependencies.
var thirdParty = map[string][]string{
	"model":      {"go.yaml.in/yaml/v3"},
	"validate":   {"go.yaml.in/yaml/v3"},
	"emu/kernel": {"golang.org/x/sys/cpu"},
	// gonum/plot draws the charts (issue 14): a pure-Go module, so the
	// binary stays self-contained and nothing third-party is copied in.
	"chart": {"gonum.org/v1/plot", "gonum.org/v1/plot/plotter", "gonum.org/v1/plot/text", "gonum.org/v1/plot/vg",
		"gonum.org/v1/plot/vg/draw", "gonum.org/v1/plot/vg/vgimg", "gonum.org/v1/plot/vg/vgsvg"},
}

// edge packages do I/O: files, flags, sockets, processes, the wall clock.
// Every other package is core.
var edge = map[string]string{
	"cmd/shardlab":    "the command line",
	"web":             "the HTTP handler",
	"emu/mpi":         "the MPI transport: its environment, its watchdog's clock",
	"internal/golden": "test helper: reads and rewrites golden files under -update",
}

// coreForbidden are the imports core packages may not have (and their
// subpackages: os/exec, net/http).
var coreForbidden = []string{"os", "net", "flag"}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
}

const module = "shardlab"

// buildTags are the builds checked: the default, MPI (emu/mpi's cgo
// transport) and OpenBLAS (emu's optional cgo GEMM).
var buildTags = []string{"", "mpi", "openblas"}

// listPackages runs go list -json over the module with the given build tags.
func listPackages(t *testing.T, tags string) []listedPackage {
	t.Helper()
	args := []string{"list", "-json=ImportPath,Dir,GoFiles,CgoFiles,Imports"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// allowed is the closure of the table: every package a row may import.
func allowed(table map[string][]string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	var visit func(p string) map[string]bool
	visit = func(p string) map[string]bool {
		if a, ok := out[p]; ok {
			return a
		}
		a := map[string]bool{}
		out[p] = a
		for _, d := range table[p] {
			a[d] = true
			for dd := range visit(d) {
				a[dd] = true
			}
		}
		return a
	}
	for p := range table {
		visit(p)
	}
	return out
}

// layerViolations lists every import of a module package that the table
// (and the exceptions) do not allow, as "from imports to".
func layerViolations(imports map[string][]string, table map[string][]string, except map[[2]string]string, external map[string][]string) []string {
	ok := allowed(table)
	var bad []string
	for from, imps := range imports {
		if _, known := table[from]; !known {
			bad = append(bad, from+" is not in the layer table")
			continue
		}
		for _, imp := range imps {
			to, inModule := strings.CutPrefix(imp, module+"/")
			switch {
			case inModule && (ok[from][to] || ok[from]["*"] || except[[2]string{from, to}] != ""):
			case inModule:
				bad = append(bad, from+" imports "+to)
			case isStd(imp) || imp == "C" || slices.Contains(external[from], imp):
			default:
				bad = append(bad, from+" imports the third-party "+imp)
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// isStd reports whether an import path is the standard library's (no dot
// in its first element).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// TestLayers enforces the import direction of ARCHITECTURE.md on the real
// packages, in the default build and with -tags mpi.
func TestLayers(t *testing.T) {
	for _, tags := range buildTags {
		imports := map[string][]string{}
		for _, p := range listPackages(t, tags) {
			imports[strings.TrimPrefix(p.ImportPath, module+"/")] = p.Imports
		}
		for _, v := range layerViolations(imports, layers, layerExceptions, thirdParty) {
			t.Errorf("tags %q: %s, against ARCHITECTURE.md", tags, v)
		}
	}
	for pair := range layerExceptions {
		if slices.Contains(layers[pair[0]], pair[1]) {
			t.Errorf("exception %v is in the table now: drop it", pair)
		}
	}
}

// TestLayerCheckFails shows the check catches what it should.
func TestLayerCheckFails(t *testing.T) {
	imports := map[string][]string{
		"mesh":  {"shardlab/hw", "shardlab/unit", "fmt"}, // unit through hw: allowed
		"emu":   {"shardlab/mesh", "shardlab/cost"},      // the emulator must not ask cost
		"cost":  {"shardlab/plan"},                       // upwards
		"plan":  {"github.com/some/sdk"},                 // dependency creep
		"extra": nil,                                     // a package without a row
		// the MPI transport asks the fabric only, never the emulator's core
		"emu/mpi": {"shardlab/emu/fabric", "shardlab/collective", "shardlab/emu"},
	}
	got := layerViolations(imports, layers, layerExceptions, thirdParty)
	want := []string{"cost imports plan", "emu imports cost", "emu/mpi imports emu", "extra is not in the layer table", "plan imports the third-party github.com/some/sdk"}
	if !slices.Equal(got, want) {
		t.Errorf("layerViolations = %q, want %q", got, want)
	}
}

// TestCorePackagesArePure: core packages import no os, net or flag and read
// no wall clock; I/O and time live in the edge packages.
func TestCorePackagesArePure(t *testing.T) {
	for _, tags := range buildTags {
		for _, p := range listPackages(t, tags) {
			name := strings.TrimPrefix(p.ImportPath, module+"/")
			if _, isEdge := edge[name]; isEdge {
				continue
			}
			for _, imp := range p.Imports {
				for _, f := range coreForbidden {
					if imp == f || strings.HasPrefix(imp, f+"/") {
						t.Errorf("tags %q: core package %s imports %s", tags, name, imp)
					}
				}
			}
			for _, f := range append(p.GoFiles, p.CgoFiles...) {
				path := filepath.Join(p.Dir, f)
				calls, err := wallClockCalls(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range calls {
					t.Errorf("core package %s reads the wall clock: %s", name, c)
				}
			}
		}
	}
}

// wallClockCalls parses a Go file (src, or the file when src is nil) and
// returns each use of time.Now, time.Since or time.Until (the last two
// call Now), whatever name the file imports "time" under.
func wallClockCalls(path string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			name = "time"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil, nil
	}
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
			calls = append(calls, fset.Position(sel.Pos()).String()+" time."+sel.Sel.Name)
		}
		return true
	})
	return calls, nil
}

func TestWallClockCalls(t *testing.T) {
	tests := []struct {
		src  string
		want int
	}{
		{"package p\nimport \"time\"\nvar d = time.Second // time.Now() in a comment\n", 0},
		{"package p\nimport \"time\"\nfunc f() { _ = time.Now() }\n", 1},
		{"package p\nimport clock \"time\"\nfunc f() { now := clock.Now; _ = clock.Since(now()) }\n", 2},
		{"package p\nimport \"fmt\"\ntype x struct{ Now func() }\nvar time x\nfunc f() { time.Now(); fmt.Println() }\n", 0},
	}
	for _, tt := range tests {
		got, err := wallClockCalls("x.go", tt.src)
		if err != nil || len(got) != tt.want {
			t.Errorf("wallClockCalls(%q) = %q, %v, want %d calls", tt.src, got, err, tt.want)
		}
	}
}

// TestEmulatorIsIndependentOfCost keeps the emulator an independent check
// of the cost model: nothing emu depends on, even indirectly, is cost or
// plan.
func TestEmulatorIsIndependentOfCost(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "shardlab/emu").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "shardlab/cost" || dep == "shardlab/plan" {
			t.Errorf("emu depends on %s", dep)
		}
	}
}
