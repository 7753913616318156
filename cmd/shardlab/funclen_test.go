package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
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
