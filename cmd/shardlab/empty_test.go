package main

import (
	"flag"
	"sort"
	"strings"
	"testing"
)

// TestEmptyFlagValuesRefused: every command's flags that take a value
// refuse an explicitly empty one (or one of spaces) with a usage error
// naming the flag and what it accepts. --model "" and --tpu "" planned
// the defaults, exit 0, while --remat "" was refused.
func TestEmptyFlagValuesRefused(t *testing.T) {
	var names []string
	for n := range commandFlags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		commandFlags[n]().VisitAll(func(f *flag.Flag) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				return
			}
			for _, v := range []string{"", "  "} {
				err := parseFlags(commandFlags[n](), []string{"--" + f.Name + "=" + v})
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				want := "--" + f.Name + ` "` + v + `" is empty, want `
				switch {
				case !isUsage(err):
					t.Errorf("%s --%s=%q: %v, want a usage error", n, f.Name, v, err)
				case !strings.Contains(msg, want) || strings.Contains(msg, "want a value;") || strings.Contains(msg, "\n"):
					t.Errorf("%s --%s=%q: %q, want one line with %q and what the flag accepts", n, f.Name, v, msg, want)
				}
			}
		})
	}
}

// TestEmptyFlagValuesExit2: the empty values the review found taking the
// defaults exit 2 with one line naming the flag.
func TestEmptyFlagValuesExit2(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--model", ""}, {"plan", "--tpu", ""}, {"plan", "--mesh", ""}, {"plan", "--global-batch", ""},
		{"plan", "--max-global-batch", ""}, {"plan", "--calibration", ""}, {"inference", "--hf-model", ""},
		{"budget", "--model", ""}, {"capacity", "--tpu", ""}, {"export", "maxtext", "--model", ""}, {"run", "--mesh", ""},
	} {
		flag := args[len(args)-2]
		fail(t, args, flag+` "" is empty, want `, "leave "+flag+" out")
	}
}
