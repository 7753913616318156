package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be without saying why: about
// two screens.
const maxFuncLines = 80

// TestFunctionsFitOnTwoScreens: no function in the repository is over
// maxFuncLines lines unless its doc comment says why ("over 80 lines
// because ...").
func TestFunctionsFitOnTwoScreens(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines && (fn.Doc == nil || !strings.Contains(fn.Doc.Text(), "over 80 lines because")) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %s is %d lines; split it, or say in its doc comment why it is over 80 lines because ...", rel, fn.Name.Name, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFunctionLengthCheckCanFail(t *testing.T) {
	// The check's own parse: a 90-line function without a reason is found.
	src := "package p\nfunc f() {\n" + strings.Repeat("\t_ = 1\n", 88) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	fn := f.Decls[0].(*ast.FuncDecl)
	if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n != 90 {
		t.Errorf("counted %d lines, want 90", n)
	}
}

// strictPackages is every package of the module, as directories below
// root holding Go files (testdata and hidden directories aside): each is
// held to the issue 30 limits, no function over strictFuncLines lines and
// no file over strictFileLines lines outside tests, with no reason that
// excuses either. A new package is held as soon as it exists.
func strictPackages(root string) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (name == "testdata" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if files, _ := filepath.Glob(filepath.Join(path, "*.go")); len(files) > 0 {
			pkgs = append(pkgs, path)
		}
		return nil
	})
	return pkgs, err
}

const (
	strictFuncLines = 60
	strictFileLines = 700
)

// overLimits lists the functions over strictFuncLines lines and the file
// itself if over strictFileLines lines, in the Go source src of path.
func overLimits(path string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var over []string
	if n := fset.File(f.Pos()).LineCount(); n > strictFileLines {
		over = append(over, fmt.Sprintf("%s is %d lines, over %d: split it by concept", path, n, strictFileLines))
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > strictFuncLines {
			over = append(over, fmt.Sprintf("%s: %s is %d lines, over %d", path, fn.Name.Name, n, strictFuncLines))
		}
	}
	return over, nil
}

// TestStrictPackagesFit holds the strict packages to the limits, in every
// build (the files of every tag are read).
func TestStrictPackagesFit(t *testing.T) {
	pkgs, err := strictPackages(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 25 || !slices.Contains(pkgs, filepath.Join("..", "..", "plan")) {
		t.Fatalf("found %d packages %v; want the module's (plan among them)", len(pkgs), pkgs)
	}
	for _, pkg := range pkgs {
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			over, err := overLimits(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range over {
				t.Error(o)
			}
		}
	}
}

func TestStrictLimitsCanFail(t *testing.T) {
	long := "package p\nfunc f() {\n" + strings.Repeat("\t_ = 1\n", strictFuncLines-1) + "}\nfunc g() {}\n"
	if over, err := overLimits("p.go", long); err != nil || len(over) != 1 || !strings.Contains(over[0], "f is 61 lines") {
		t.Errorf("a 61-line function: %q, %v; want it found", over, err)
	}
	big := "package p\n" + strings.Repeat("// a line\n", strictFileLines)
	if over, err := overLimits("p.go", big); err != nil || len(over) != 1 || !strings.Contains(over[0], "701 lines") {
		t.Errorf("a 701-line file: %q, %v; want it found", over, err)
	}
	if over, err := overLimits("p.go", "package p\nfunc f() {\n"+strings.Repeat("\t_ = 1\n", strictFuncLines-2)+"}\n"); err != nil || len(over) != 0 {
		t.Errorf("a 60-line function: %q, %v; want none", over, err)
	}
}
