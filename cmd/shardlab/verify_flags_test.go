package main

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"shardlab/export"
	"shardlab/web"
)

// flagsOf is the FlagSet of the shardlab command args names ("shardlab",
// "export", "maxtext", flags...), as commandTable builds it for the
// command's run (commandFlags), and the arguments after its words.
func flagsOf(t *testing.T, args []string) (*flag.FlagSet, []string) {
	t.Helper()
	for n := min(3, len(args)); n >= 2; n-- {
		if args[0] != "shardlab" {
			break
		}
		if mk, ok := commandFlags[strings.Join(args[1:n], " ")]; ok && mk != nil {
			return mk(), args[n:]
		}
	}
	t.Fatalf("command %q: no shardlab command with flags", args)
	return nil, nil
}

// stepsFlagsExist checks that every flag of the export and check commands
// of steps s is one of that command's own flags (its FlagSet's, not a
// copy of the names), and that the FlagSet reads the arguments whole.
func stepsFlagsExist(t *testing.T, who string, s *export.Steps) {
	t.Helper()
	if s == nil || !s.Available || len(s.Commands) != 3 {
		t.Fatalf("%s: verify steps %+v, want the three commands", who, s)
	}
	for _, c := range []export.Command{s.Commands[0], s.Commands[2]} {
		fs, args := flagsOf(t, c.Args)
		for _, a := range args {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if strings.HasPrefix(a, "--") && fs.Lookup(name) == nil {
				t.Errorf("%s: the %s step's %s is no flag of %s", who, c.Step, a, fs.Name())
			}
		}
		if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
			t.Errorf("%s: %s reads the %s step's %q: %v, arguments left %q", who, fs.Name(), c.Step, args, err, fs.Args())
		}
	}
}

// TestVerifyFlagsExist: every flag the verify steps' export and check
// commands pass, as the command line prints them (plan --json --verify)
// and as the web page does (its plan.json: the form's options away from
// their defaults, as flags), is a flag of that command's own FlagSet. The
// two front ends each spelt check's two flags in a literal of their own
// (review of dcd4fab #5); package export now builds the commands from
// options each front end spells (export.Commands).
func TestVerifyFlagsExist(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--seq", "4096", "--precision", "bf16", "--hbm-headroom", "0.1",
		"--optimizer-offload", "--causal-flops=false", "--vocab-tiles", "2", "--attention", "dot_product", "--efficiency", "0.5",
		"--temp-scale", "1.2", "--quantization", "int8", "--slices", "2", "--dcn-gbps", "50"}
	var cli verifyDoc
	out, errOut, code := runCmd(append([]string{"plan", "--json", "--verify", "--top", "3", "--example-cost", "1ms", "--framework", "maxtext"}, job...)...)
	if code != 0 || json.Unmarshal([]byte(out), &cli) != nil {
		t.Fatalf("plan --json --verify %q: exit %d, %s", job, code, errOut)
	}
	stepsFlagsExist(t, "plan --verify", cli.Verify)

	q := "model=llama3-8b&tpu=v5p-8&seq=4096&precision=bf16&hbm_headroom=0.1&optimizer_offload=true&causal_flops=false&vocab_tiles=2" +
		"&attention=dot_product&efficiency=0.5&temp_scale=1.2&quantization=int8&slices=2&dcn_gbps=50&top=3&example_cost=1ms&framework=maxtext"
	rec := httptest.NewRecorder()
	web.New(webTest).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/download/plan.json?"+q, nil))
	var page verifyDoc
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil {
		t.Fatalf("GET /download/plan.json?%s = %d %.300s", q, rec.Code, rec.Body)
	}
	stepsFlagsExist(t, "the web page", page.Verify)
	for _, i := range []int{0, 2} {
		// the same options, in each front end's order (the flags' names, the form's)
		if c, p := cli.Verify.Commands[i], page.Verify.Commands[i]; !slices.Equal(optionPairs(c.Args), optionPairs(p.Args)) {
			t.Errorf("the same job's %s steps differ:\nplan --verify: %s\nthe web page:  %s", c.Step, c.Line, p.Line)
		}
	}
}

// optionPairs are a command's arguments as its words and its options,
// each a flag with its value, sorted.
func optionPairs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--") && !strings.Contains(args[i], "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			out = append(out, args[i]+" "+args[i+1])
			i++
			continue
		}
		out = append(out, args[i])
	}
	slices.Sort(out)
	return out
}
