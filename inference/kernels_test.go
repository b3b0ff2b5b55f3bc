package inference

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestKernelsImmutable: nothing assigns cpu or goKernels, or a field of
// them, after their declaration, in any file of the package, tests and
// every architecture's files included. A test wanting another choice
// copies one (k := cpu; k.avx512 = false) and builds with the copy, so
// tests of different paths share nothing and run in parallel.
func TestKernelsImmutable(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's files: %v %v", files, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		check := func(e ast.Expr) {
			for {
				switch x := e.(type) {
				case *ast.SelectorExpr:
					e = x.X
					continue
				case *ast.IndexExpr:
					e = x.X
					continue
				case *ast.ParenExpr:
					e = x.X
					continue
				case *ast.StarExpr:
					e = x.X
					continue
				case *ast.Ident:
					if x.Name == "cpu" || x.Name == "goKernels" {
						t.Errorf("%s: %s is assigned; copy it and change the copy", fset.Position(x.Pos()), x.Name)
					}
				}
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				if s.Tok != token.DEFINE {
					for _, l := range s.Lhs {
						check(l)
					}
				}
			case *ast.IncDecStmt:
				check(s.X)
			}
			return true
		})
	}
}

// A kernels value names every path: the Go loops' choice runs no fast
// path, whatever the CPU has, and cpu's gather (amd64's) is left to the
// measurement, which every Transform resolves before laying out its tiles.
func TestKernelsChoice(t *testing.T) {
	t.Parallel()
	if goKernels.simd || goKernels.embedSIMD() {
		t.Fatal("goKernels runs a fast path")
	}
	if simdName == "avx2" && cpu.simd && cpu.gather != -1 { // only amd64's fast paths gather
		t.Fatalf("cpu's gather is %d, not measured", cpu.gather)
	}
	tr, err := NewTransform(TransformSpec{Generator: GeneratorV1, Seed: 1, Sigma: 1, D: 64, P: 128})
	if err != nil {
		t.Fatal(err)
	}
	if tr.k.gather < 0 || tr.k.simd != cpu.simd {
		t.Fatalf("a transform's kernels %+v, cpu's %+v", tr.k, cpu)
	}
	m, err := newModel(testSpec(t, 2, 8, 256, 2, 0), goKernels)
	if err != nil {
		t.Fatal(err)
	}
	if m.emb.k.simd || m.emb.tr.k.simd || m.emb.tr.NewWorkspace().u != nil {
		t.Fatal("a model built with goKernels has a fast path")
	}
}
