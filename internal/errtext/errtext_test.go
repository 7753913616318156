package errtext

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fieldErr struct{ err error }

func (e *fieldErr) Error() string { return "mesh: ICI factors = 3, want a product of 4" }
func (e *fieldErr) Unwrap() error { return e.err }

// TestDetail: the package's name and a trailing sentinel after ": " go;
// a first word that is not a package name (it has a space, a capital or a
// quote before its colon), a sentinel that is not at the end or not after
// ": ", and an error that is nothing but its sentinel stay.
func TestDetail(t *testing.T) {
	job := errors.New("invalid job")
	invalid := errors.New("invalid mesh")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("cost: quantization fp8: TPU v5e publishes no fp8 peak, want none (bf16): %w", job), "quantization fp8: TPU v5e publishes no fp8 peak, want none (bf16)"},
		{&fieldErr{invalid}, "ICI factors = 3, want a product of 4"},
		{fmt.Errorf("hw: count %q: no slice of this size", "v5p-7"), `count "v5p-7": no slice of this size`},
		{fmt.Errorf("systolic: array %q: %w; want ROWSxCOLS", "0x128", errors.New("invalid systolic input")), `array "0x128": invalid systolic input; want ROWSxCOLS`},
		{fmt.Errorf("seq: 0, want 1 to 2097152: %w", job), "seq: 0, want 1 to 2097152"},
		{fmt.Errorf("quantization fp8: no peak: %w", job), "quantization fp8: no peak"},
		{fmt.Errorf("TPU v5e: no peak"), "TPU v5e: no peak"},
		{fmt.Errorf(`"x": bad`), `"x": bad`},
		{job, "invalid job"},
		{fmt.Errorf("cost: %w", job), "invalid job"},
		{fmt.Errorf("plan: %w and %w", invalid, job), "invalid mesh and invalid job"},
	} {
		if got := Detail(c.err); got != c.want {
			t.Errorf("Detail(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestAfter: a lead that restates the value, bare or quoted, goes; one
// that states another value, or nothing after it, stays.
func TestAfter(t *testing.T) {
	for _, c := range []struct {
		detail, value, want string
		ok                  bool
	}{
		{"quantization fp8: TPU v5e publishes no fp8 peak", "fp8", "TPU v5e publishes no fp8 peak", true},
		{`count "v5p-7": no slice of this size`, "v5p-7", "no slice of this size", true},
		{`array "0": invalid systolic input`, "0", "invalid systolic input", true},
		{"quantization fp4: want none, int8 or fp8", "fp8", "quantization fp4: want none, int8 or fp8", false},
		{"ICI factors = 3, want a product of 4", "data=3", "ICI factors = 3, want a product of 4", false},
		{"quantization fp8: ", "fp8", "quantization fp8: ", false},
		{"Count fp8: x", "fp8", "Count fp8: x", false},
		{"quantization fp8: x", "", "quantization fp8: x", false},
	} {
		got, ok := After(c.detail, c.value)
		if got != c.want || ok != c.ok {
			t.Errorf("After(%q, %q) = %q, %v; want %q, %v", c.detail, c.value, got, ok, c.want, c.ok)
		}
	}
}

// TestPackagesAreTheModules holds packages to the module's top-level
// package directories (each with a non-test .go file), cmd, docs and
// internal aside: a package added or renamed must be added here, or its
// errors keep their prefix.
func TestPackagesAreTheModules(t *testing.T) {
	dirs, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		name := d.Name()
		if !d.IsDir() || name == "cmd" || name == "internal" || strings.HasPrefix(name, ".") {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("../..", name, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				seen[name] = true
				break
			}
		}
	}
	for name := range seen {
		if !packages[name] {
			t.Errorf("package %s is not in packages", name)
		}
	}
	for name := range packages {
		if !seen[name] {
			t.Errorf("packages names %s, which is no package of the module", name)
		}
	}
}

// TestOrList: a list of choices as a sentence names them, by hand.
func TestOrList(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"bf16"}, "bf16"},
		{[]string{"bf16", "int8"}, "bf16 or int8"},
		{[]string{"1", "2", "4"}, "1, 2 or 4"},
	} {
		if got := OrList(c.in); got != c.want {
			t.Errorf("OrList(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
