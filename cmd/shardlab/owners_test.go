package main

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"shardlab/mesh"
)

// The tests here hold ARCHITECTURE.md's owners in the source itself: a
// word that belongs to one package (an axis name, a MaxText key, a CLI
// flag) is spelt as a string only there; everything else asks the owner
// (mesh.Axis.String, maxtext.ICIKey, plan.Option's {placeholder}). They
// read the non-test Go source of the module with go/parser: a string
// literal counts, a comment, a struct tag or an import path does not.

// literal is one string literal of a source file.
type literal struct {
	path  string // from the module root, slash-separated
	line  int
	value string
}

// sourceLiterals parses src (the file at path when src is nil) and returns
// its string literals in code, unquoted; struct tags and import paths are
// left out (a tag names a field of our own JSON or YAML document).
func sourceLiterals(path string, src any) ([]literal, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []literal
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Field:
			if n.Tag != nil { // the field's type, not its tag
				ast.Inspect(n.Type, visit)
				return false
			}
		case *ast.BasicLit:
			if v, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil {
				out = append(out, literal{path: filepath.ToSlash(path), line: fset.Position(n.Pos()).Line, value: v})
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return out, nil
}

// moduleLiterals is every string literal of the module's non-test Go
// files, by path from the module root.
func moduleLiterals(t *testing.T) []literal {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []literal
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		lits, err := parseAt(path, rel)
		out = append(out, lits...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 1000 {
		t.Fatalf("found only %d string literals in the module", len(out))
	}
	return out
}

// parseAt reads the file at path and names its literals by rel.
func parseAt(path, rel string) ([]literal, error) {
	lits, err := sourceLiterals(path, nil)
	for i := range lits {
		lits[i].path = filepath.ToSlash(rel)
	}
	return lits, err
}

// ownerRule is one word class with its owner: the literals match finds
// are allowed in the owner's package and at the listed exceptions only.
type ownerRule struct {
	owner string // package directory from the module root: "mesh"
	// match returns the words of the class a literal spells ("fsdp").
	match func(value string) []string
	// except are the allowed spellings outside the owner, each with its
	// reason: a package directory (all its files), or "path word".
	except map[string]string
}

// violations lists each literal outside the owner that spells a word of
// the class, as "path:line: word in "literal"", sorted; and the
// exceptions that no literal uses any more (stale).
func (r ownerRule) violations(lits []literal) (bad, stale []string) {
	used := map[string]bool{}
	for _, l := range lits {
		dir := pathDir(l.path)
		if dir == r.owner || strings.HasPrefix(dir, r.owner+"/") {
			continue
		}
		for _, w := range r.match(l.value) {
			switch key := l.path + " " + w; {
			case r.except[key] != "":
				used[key] = true
			case r.except[dir] != "":
				used[dir] = true
			default:
				bad = append(bad, l.path+":"+strconv.Itoa(l.line)+": "+w+" in "+strconv.Quote(l.value))
			}
		}
	}
	for k := range r.except {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(bad)
	sort.Strings(stale)
	return bad, stale
}

// pathDir is a file's package directory from the module root.
func pathDir(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[:i]
	}
	return "."
}

// axisInLayout finds an axis written in the layout syntax mesh reads and
// writes (mesh.ParseAxes, mesh.Degree.String): its name, "=" and a factor,
// a format verb or the placeholder N, as in "expert=%d", "fsdp=%d(dcn)",
// "data=2(dcn),fsdp=64" or "expert=N". A remat policy's "tensor=device"
// is no layout. Each match is the name with its "=" ("expert="), so that
// an exception for the bare word does not excuse a layout.
var axisInLayout = func() *regexp.Regexp {
	var names []string
	for _, a := range mesh.All() {
		names = append(names, regexp.QuoteMeta(a.String()))
	}
	return regexp.MustCompile(`\b(?:` + strings.Join(names, "|") + `)=(?:[0-9]|%|N\b)`)
}()

// axisRule: only package mesh spells an axis. A literal spells an axis
// when it is exactly an axis's name as mesh.Axis.String gives it
// ("fsdp"), or writes one in layout syntax ("expert=%d"); the rest ask
// mesh (mesh.FSDP.String(), ParseAxis, mesh.Degree.String, mesh.Spell).
// Prose that uses the word ("the data", "MaxText's pipeline", "data %d x
// fsdp %d") is not an axis.
var axisRule = ownerRule{
	owner: "mesh",
	match: func(v string) []string {
		var out []string
		for _, a := range mesh.All() {
			if v == a.String() {
				out = append(out, v)
			}
		}
		for _, m := range axisInLayout.FindAllString(v, -1) {
			name, _, _ := strings.Cut(m, "=")
			out = append(out, name+"=")
		}
		return out
	},
	except: map[string]string{
		"maxtext": "MaxText's own axis names (its ici_<axis>_parallelism keys, base.yml), the dialect package maxtext " +
			"owns; they equal shardlab's today, but are MaxText's spelling, not mesh's",
		"export/pytorch.go data": "the PyTorch/XLA mesh's axis names (HybridMesh's data, fsdp, model), the PyTorch dialect " +
			"export writes; tensor is spelt model there",
		"export/pytorch.go fsdp":       "as export/pytorch.go data",
		"chart/plan.go pipeline":       "the name of the pipeline-schedule chart (a file and element name), not an axis",
		"cost/remat.go context":        "MaxText's checkpoint name of the attention output tensor (layers/attentions.py), not the context axis",
		"cmd/shardlab/emurun.go data":  "run's --data flag: the training text, not the data axis",
		"cmd/shardlab/flags.go data":   "what run's --data flag accepts (acceptedText), not the data axis",
		"cmd/shardlab/runckpt.go data": "the checkpoint header's field naming the training data (--data), not the data axis",
		"plan/tier.go pipeline": "plan's name of a cross-slice strategy (plan.Across: DP, FSDP or pipeline), printed " +
			"beside DP and FSDP; the strategy puts the pipeline axis across slices, but the word names the strategy",
	},
}

// maxtextKey finds MaxText's layout keys: the parallelism keys
// (ici_<axis>_parallelism, dcn_<axis>_parallelism, base.yml), also when
// built from a suffix, and per_device_batch_size, in a literal or in
// prose. These are the keys package maxtext translates between chips and
// JAX devices; the rest of MaxText's keys are written by export's
// MaxText file only.
var maxtextKey = regexp.MustCompile(`[a-z_]*_parallelism\b|\bper_device_batch_size\b`)

// keyRule: only package maxtext spells a MaxText layout key.
var keyRule = ownerRule{
	owner:  "maxtext",
	match:  func(v string) []string { return maxtextKey.FindAllString(v, -1) },
	except: map[string]string{},
}

// flagMention finds "--name" in text.
var flagMention = regexp.MustCompile(`(?:^|[^\w-])--([a-z0-9][a-z0-9-]*)`)

// flagRule is: no package outside cmd spells one of shardlab's flags
// (library errors name fields, plan.Option's {placeholders}, which each
// front end spells its own way). flags is every flag of every command.
func flagRule(flags map[string]bool) ownerRule {
	return ownerRule{
		owner: "cmd",
		match: func(v string) []string {
			var out []string
			for _, m := range flagMention.FindAllStringSubmatch(v, -1) {
				if flags[m[1]] {
					out = append(out, "--"+m[1])
				}
			}
			return out
		},
		except: foreignFlags,
	}
}

// foreignFlags are xpk's and vLLM's own flags, which shardlab's export xpk
// and inference take under the tools' own names, and which the files that
// write those command lines spell as the tools' flags.
var foreignFlags = func() map[string]string {
	out := map[string]string{}
	for k, v := range xpkFlags {
		out[k] = v
	}
	for _, f := range []string{"tensor-parallel-size", "data-parallel-size", "max-model-len", "max-num-seqs",
		"max-num-batched-tokens", "kv-cache-dtype", "gpu-memory-utilization"} {
		out["export/vllm.go --"+f] = "vllm serve's own flag --" + f + ", in the command export writes (vllm-project/vllm vllm/engine/arg_utils.py @99d7eb5d; export/testdata/vllm_serve_options.txt)"
	}
	out["export/vllmcheck.go --data-parallel-size"] = "vllm serve's own flag --data-parallel-size, which the checker of the command export writes reads (tpu-inference refuses TPU_MULTIPROCESS_DP=1 with attention DP above one replica)"
	out["web/serving.go --kv-cache-dtype"] = "the serving form's help names vLLM's flag --kv-cache-dtype as vLLM's, the field it sets"
	return out
}()

// xpkFlags are xpk's own flags, which shardlab's export xpk takes under
// xpk's names and export/xpk.go writes in the xpk command
// (AI-Hypercomputer/xpk src/xpk/parser/workload.py @367c8382): the xpk
// command line is that file's dialect. Its errors name fields
// ({reservation}), which each front end spells; the capacity flag is
// written as "--" and the mode (--spot), so --capacity is not among them.
var xpkFlags = func() map[string]string {
	out := map[string]string{}
	for _, f := range []string{"cluster", "workload", "reservation", "docker-image", "base-docker-image", "max-restarts"} {
		out["export/xpk.go --"+f] = "xpk workload create's own flag --" + f + ", in the xpk command export writes"
	}
	return out
}()

// cliFlags is every flag of every shardlab command.
func cliFlags() map[string]bool {
	out := map[string]bool{}
	for _, build := range commandFlags {
		build().VisitAll(func(f *flag.Flag) { out[f.Name] = true })
	}
	return out
}

// TestOwnersSpellTheirWords runs the three rules over the module.
func TestOwnersSpellTheirWords(t *testing.T) {
	lits := moduleLiterals(t)
	for _, rule := range []struct {
		name string
		r    ownerRule
	}{
		{"an axis name outside mesh", axisRule},
		{"a MaxText layout key outside maxtext", keyRule},
		{"a shardlab flag outside cmd", flagRule(cliFlags())},
	} {
		bad, stale := rule.r.violations(lits)
		for _, b := range bad {
			t.Errorf("%s: %s", rule.name, b)
		}
		for _, s := range stale {
			t.Errorf("%s: exception %q matches nothing now: drop it", rule.name, s)
		}
	}
}

// TestOwnerRulesFail plants a violation of each rule in a small source
// file and shows the rule finds it, and that a comment, a struct tag, an
// import path, a listed exception and the owner's own files pass.
func TestOwnerRulesFail(t *testing.T) {
	const src = `package p

import "shardlab/mesh" // "fsdp" in a comment

type T struct {
	N int ` + "`json:\"fsdp\" yaml:\"per_device_batch_size\"`" + `
}

var (
	a = "tensor"
	b = "ici_" + "fsdp" + "_parallelism"
	c = map[string]int{"per_device_batch_size": 1}
	d = fmt.Errorf("pass --global-batch %d", 2)
	e = "the tensor's data" // prose, not an axis
	f = "--data-parallel-size" // vLLM's flag, not shardlab's --data
	g = fmt.Errorf("expert=%d must divide; want fsdp=2(dcn),data=N")
	h = "tensor=device|offload|remat, data %d x fsdp %d" // a remat policy and prose, not layouts
)
`
	lits, err := sourceLiterals("lib/p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		r    ownerRule
		want []string
	}{
		{"axis", axisRule, []string{`lib/p.go:10: tensor in "tensor"`, `lib/p.go:11: fsdp in "fsdp"`,
			`lib/p.go:16: data= in "expert=%d must divide; want fsdp=2(dcn),data=N"`,
			`lib/p.go:16: expert= in "expert=%d must divide; want fsdp=2(dcn),data=N"`,
			`lib/p.go:16: fsdp= in "expert=%d must divide; want fsdp=2(dcn),data=N"`}},
		{"key", keyRule, []string{`lib/p.go:11: _parallelism in "_parallelism"`, `lib/p.go:12: per_device_batch_size in "per_device_batch_size"`}},
		{"flag", flagRule(map[string]bool{"global-batch": true, "data": true}), []string{`lib/p.go:13: --global-batch in "pass --global-batch %d"`}},
	} {
		got, _ := tt.r.violations(lits)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s rule: violations = %q, want %q", tt.name, got, tt.want)
		}
		// the owner may spell its words
		own := slices.Clone(lits)
		for i := range own {
			own[i].path = tt.r.owner + "/p.go"
		}
		if got, _ := tt.r.violations(own); len(got) != 0 {
			t.Errorf("%s rule: the owner's own file: %q, want none", tt.name, got)
		}
	}
	// an exception allows its word in its file only, and one unused is stale
	// (the bare word's exception does not excuse the word in a layout)
	r := ownerRule{owner: "mesh", match: axisRule.match, except: map[string]string{"lib/p.go tensor": "test",
		"lib/q.go data": "test", "lib/p.go expert=": "test", "lib/p.go data": "test"}}
	got, stale := r.violations(lits)
	if want := []string{`lib/p.go:11: fsdp in "fsdp"`, `lib/p.go:16: data= in "expert=%d must divide; want fsdp=2(dcn),data=N"`,
		`lib/p.go:16: fsdp= in "expert=%d must divide; want fsdp=2(dcn),data=N"`}; !slices.Equal(got, want) {
		t.Errorf("with an exception: violations = %q, want %q", got, want)
	}
	if want := []string{"lib/p.go data", "lib/q.go data"}; !slices.Equal(stale, want) {
		t.Errorf("stale exceptions = %q, want %q", stale, want)
	}
}
