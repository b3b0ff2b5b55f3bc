//go:build ignore

// fleetgraph measures the shape of fleet/ from its import graph, the way
// issue 40 counts it, so that a split of the fleet's core can state its
// counts before and after with one command:
//
//	go run scripts/fleetgraph.go          # the counts
//	go run scripts/fleetgraph.go -arrows  # and every arrow, for a diff
//
// Definitions (reproducible from the source alone, tests excluded):
//
//   - A room is a non-test .go file of a package under fleet/.
//   - An arrow A → B joins two rooms when A uses a package-level object,
//     a method or a struct field declared in B (go/types' Uses): within a
//     package, and across packages (console's use of rollout.Rollout
//     points at fleet/rollout/rollout.go). Each ordered pair counts once.
//   - Floors: the rooms' strongly connected components, laid out so that
//     a component's floor is one above the highest it points to (a room
//     that points at nothing is on floor 0). A package's floor count is
//     how many distinct floors its rooms occupy.
//   - A back reference is an arrow between two rooms of the same
//     component: one that points up (or sideways) in the layering, since
//     the two rooms reach each other.
//
// Package arrows (one per imported fleet package) are listed too. It
// type-checks the fleet's packages from source and everything else from
// the build's export data (go list -export), so it needs nothing beyond
// the standard library. It is a //go:build ignore file: no part of the
// module's packages, tests or vet.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

const module = "github.com/trit-iot/trit"

type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Imports    []string
	Standard   bool
}

func main() {
	showArrows := flag.Bool("arrows", false, "list every arrow")
	flag.Parse()
	log.SetFlags(0)

	out, err := exec.Command("go", "list", "-export", "-deps", "-json", "./fleet/...").Output()
	if err != nil {
		log.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listed{}
	var order []string // dependencies first, as go list -deps prints them
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			log.Fatal(err)
		}
		pkgs[p.ImportPath] = p
		order = append(order, p.ImportPath)
	}
	isFleet := func(path string) bool {
		return path == module+"/fleet" || strings.HasPrefix(path, module+"/fleet/")
	}

	fset := token.NewFileSet()
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := pkgs[path]
		if !ok || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p.Export)
	})
	checked := map[string]*types.Package{}
	imp := importerFunc(func(path string) (*types.Package, error) {
		if p, ok := checked[path]; ok {
			return p, nil
		}
		return gc.Import(path)
	})

	root, _ := os.Getwd()
	rel := func(file string) string {
		r, err := filepath.Rel(root, file)
		if err != nil {
			return file
		}
		return r
	}
	rooms := map[string]string{} // room → its package
	arrows := map[[2]string]bool{}
	pkgArrows := map[[2]string]bool{}
	var fleetPkgs []string
	for _, path := range order {
		if !isFleet(path) {
			continue
		}
		p := pkgs[path]
		fleetPkgs = append(fleetPkgs, path)
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				log.Fatal(err)
			}
			files = append(files, f)
			rooms[rel(filepath.Join(p.Dir, name))] = path
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp}
		tp, err := conf.Check(path, fset, files, info)
		if err != nil {
			log.Fatalf("%s: %v", path, err)
		}
		checked[path] = tp
		for _, q := range p.Imports {
			if isFleet(q) {
				pkgArrows[[2]string{short(path), short(q)}] = true
			}
		}
		for id, obj := range info.Uses {
			if obj == nil || obj.Pkg() == nil || !isFleet(obj.Pkg().Path()) || !declared(obj) {
				continue
			}
			from := rel(fset.Position(id.Pos()).Filename)
			to := rel(fset.Position(obj.Pos()).Filename)
			if from != to {
				arrows[[2]string{from, to}] = true
			}
		}
	}
	for a := range arrows {
		if _, ok := rooms[a[1]]; !ok {
			delete(arrows, a) // declared in a file go list does not build here
		}
	}

	// Strongly connected components (Tarjan), then floors.
	next := map[string][]string{}
	for a := range arrows {
		next[a[0]] = append(next[a[0]], a[1])
	}
	names := make([]string, 0, len(rooms))
	for r := range rooms {
		names = append(names, r)
	}
	sort.Strings(names)
	comp := scc(names, next)
	floor := map[int]int{}
	var floorOf func(c int) int
	members := map[int][]string{}
	for _, r := range names {
		members[comp[r]] = append(members[comp[r]], r)
	}
	floorOf = func(c int) int {
		if f, ok := floor[c]; ok {
			return f
		}
		floor[c] = 0
		f := 0
		for _, r := range members[c] {
			for _, t := range next[r] {
				if comp[t] != c {
					f = max(f, floorOf(comp[t])+1)
				}
			}
		}
		floor[c] = f
		return f
	}

	fmt.Printf("fleet/ (non-test files; go run scripts/fleetgraph.go)\n")
	fmt.Printf("%-16s %5s %6s %6s %7s %6s %9s\n", "package", "files", "lines", "floors", "arrows", "out", "backrefs")
	total := struct{ files, lines, arrows, back int }{}
	for _, path := range fleetPkgs {
		var files, lines int
		fl := map[int]bool{}
		for _, r := range names {
			if rooms[r] != path {
				continue
			}
			files++
			lines += countLines(r)
			fl[floorOf(comp[r])] = true
		}
		var in, out, back int
		for a := range arrows {
			if rooms[a[0]] != path {
				continue
			}
			if rooms[a[1]] == path {
				in++
			} else {
				out++
			}
			if comp[a[0]] == comp[a[1]] {
				back++
			}
		}
		fmt.Printf("%-16s %5d %6d %6d %7d %6d %9d\n", short(path), files, lines, len(fl), in, out, back)
		total.files += files
		total.lines += lines
		total.arrows += in + out
		total.back += back
	}
	allFloors := map[int]bool{}
	for _, r := range names {
		allFloors[floorOf(comp[r])] = true
	}
	fmt.Printf("%-16s %5d %6d %6d %7d %6s %9d\n", "fleet/ total", total.files, total.lines, len(allFloors), total.arrows, "", total.back)
	var cycles []string
	for c, ms := range members {
		if len(ms) > 1 {
			cycles = append(cycles, fmt.Sprintf("%d rooms: %s", len(ms), strings.Join(ms, " ")))
		}
		_ = c
	}
	sort.Strings(cycles)
	fmt.Printf("components with more than one room: %d\n", len(cycles))
	for _, c := range cycles {
		fmt.Println("  " + c)
	}
	var pa []string
	for a := range pkgArrows {
		pa = append(pa, a[0]+" → "+a[1])
	}
	sort.Strings(pa)
	fmt.Printf("package arrows: %d\n", len(pa))
	for _, a := range pa {
		fmt.Println("  " + a)
	}
	if *showArrows {
		var as []string
		for a := range arrows {
			mark := ""
			if comp[a[0]] == comp[a[1]] {
				mark = "  (back)"
			}
			as = append(as, a[0]+" → "+a[1]+mark)
		}
		sort.Strings(as)
		fmt.Printf("arrows: %d\n", len(as))
		for _, a := range as {
			fmt.Println("  " + a)
		}
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// declared reports whether obj is declared at package level, or is a method
// or a struct field: what another file can point at.
func declared(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil || o.Parent() == o.Pkg().Scope()
	case *types.Var:
		return o.IsField() || o.Parent() == o.Pkg().Scope()
	case *types.PkgName, *types.Label:
		return false
	}
	return obj.Parent() == obj.Pkg().Scope()
}

func short(path string) string { return strings.TrimPrefix(path, module+"/") }

func countLines(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		log.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// scc returns each node's strongly connected component (Tarjan).
func scc(nodes []string, next map[string][]string) map[string]int {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	comp := map[string]int{}
	n, c := 0, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		onStack[v] = true
		succ := slices.Clone(next[v])
		sort.Strings(succ)
		for _, w := range succ {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = c
				if w == v {
					break
				}
			}
			c++
		}
	}
	for _, v := range nodes {
		if _, ok := index[v]; !ok {
			visit(v)
		}
	}
	return comp
}
