package fleet

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestLockOrder checks the lock order written in doc.go against the
// package's source: every mutex of the package is listed there, and no
// function takes one while holding one listed after it, or while holding
// a leaf — directly, or by calling a function of the package that takes
// it (followed through the package's calls). A store transaction (a
// function literal passed to Update, UpdateShared, View or leaderUpdate)
// counts as a lock of its own.
//
// It reads the source, not the running program: a lock is known by the
// struct type and field that hold it (Service.mu), an expression's type
// only through receivers, parameters, fields and local names assigned
// from them, and branches are merged conservatively. That is enough for
// this package's plain Lock/Unlock pairs; a lock it cannot name fails the
// test, so it is not silently skipped.
func TestLockOrder(t *testing.T) {
	order, leaves := docLockOrder(t)
	rank := map[string]int{}
	for i, m := range order {
		rank[m] = i
	}
	for _, m := range leaves {
		rank[m] = len(order)
	}

	c := newLockChecker(t)
	var found []string
	for m := range c.mutexes {
		found = append(found, m)
	}
	sort.Strings(found)
	for _, m := range found {
		if _, ok := rank[m]; !ok {
			t.Errorf("mutex %s is not in doc.go's lock order", m)
		}
	}
	for m := range rank {
		if m != storeLock && !c.mutexes[m] {
			t.Errorf("doc.go's lock order lists %s, which the package does not have", m)
		}
	}
	for _, p := range c.pairs() {
		outer, inner := p[0], p[1]
		switch {
		case outer == inner:
			t.Errorf("%s: %s taken while held (%s)", p[2], inner, p[3])
		case rank[outer] >= len(order):
			t.Errorf("%s: %s taken while holding %s, a leaf (%s)", p[2], inner, outer, p[3])
		case rank[outer] >= rank[inner]:
			t.Errorf("%s: %s taken while holding %s, against doc.go's order (%s)", p[2], inner, outer, p[3])
		}
	}
}

// storeLock names a store transaction in the lock order.
const storeLock = "store transaction"

// docLockOrder reads doc.go's "Lock order" section: the numbered locks in
// order, then the leaves.
func docLockOrder(t *testing.T) (order, leaves []string) {
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, "// Lock order")
	if i < 0 {
		t.Fatal(`doc.go has no "Lock order" section`)
	}
	text = text[i:]
	if j := strings.Index(text, "\n\n"); j >= 0 {
		text = text[:j]
	}
	lockName := regexp.MustCompile(`\b[A-Za-z]+\.mu\b|` + storeLock)
	numbered := regexp.MustCompile(`^//\s+\d+\.\s+`)
	inLeaves := false
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "Leaves") {
			inLeaves = true
		}
		switch {
		case inLeaves:
			leaves = append(leaves, lockName.FindAllString(line, -1)...)
		case numbered.MatchString(line):
			if m := lockName.FindString(line); m != "" {
				order = append(order, m)
			}
		}
	}
	if len(order) == 0 || len(leaves) == 0 {
		t.Fatalf("doc.go's lock order: %d ordered locks and %d leaves read", len(order), len(leaves))
	}
	return order, leaves
}

type lockChecker struct {
	t       *testing.T
	fset    *token.FileSet
	fields  map[string]map[string]string // type -> field -> the field's type (a type of the package, or "sync.Mutex")
	mutexes map[string]bool              // "Type.field"
	funcs   map[string]*ast.FuncDecl     // "Type.method" or "func"

	acquires map[string]map[string]bool // function -> the locks it takes, directly or by its calls
	calls    map[string]map[string]bool // function -> the functions it calls (not in a new goroutine)
	nested   [][4]string                // outer, inner, where, why
	under    []heldCall                 // calls made while holding locks
}

type heldCall struct {
	held   []string
	callee string
	where  string
}

func newLockChecker(t *testing.T) *lockChecker {
	c := &lockChecker{t: t, fset: token.NewFileSet(), fields: map[string]map[string]string{}, mutexes: map[string]bool{},
		funcs: map[string]*ast.FuncDecl{}, acquires: map[string]map[string]bool{}, calls: map[string]map[string]bool{}}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(c.fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					fs := map[string]string{}
					for _, fld := range st.Fields.List {
						typ := typeName(fld.Type)
						for _, n := range fld.Names {
							fs[n.Name] = typ
							if typ == "sync.Mutex" || typ == "sync.RWMutex" {
								c.mutexes[ts.Name.Name+"."+n.Name] = true
							}
						}
					}
					c.fields[ts.Name.Name] = fs
				}
			case *ast.FuncDecl:
				c.funcs[funcKey(d)] = d
			}
		}
	}
	for key, fd := range c.funcs {
		if fd.Body == nil {
			continue
		}
		env := map[string]string{}
		if fd.Recv != nil {
			for _, f := range fd.Recv.List {
				for _, n := range f.Names {
					env[n.Name] = typeName(f.Type)
				}
			}
		}
		for _, f := range fd.Type.Params.List {
			for _, n := range f.Names {
				env[n.Name] = typeName(f.Type)
			}
		}
		c.walkBlock(key, fd.Body.List, env, nil)
	}
	// Close acquires over the calls.
	for changed := true; changed; {
		changed = false
		for f, callees := range c.calls {
			for g := range callees {
				for m := range c.acquires[g] {
					if !c.acquires[f][m] {
						c.add(c.acquires, f, m)
						changed = true
					}
				}
			}
		}
	}
	return c
}

// pairs returns every (outer, inner, where, why) the code nests.
func (c *lockChecker) pairs() [][4]string {
	out := slices.Clone(c.nested)
	for _, hc := range c.under {
		for m := range c.acquires[hc.callee] {
			for _, h := range hc.held {
				out = append(out, [4]string{h, m, hc.where, "by calling " + hc.callee})
			}
		}
	}
	return out
}

func (c *lockChecker) add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// typeName is the package type an expression of type e names ("" if
// none), or "sync.Mutex".
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "sync" {
			return "sync." + e.Sel.Name
		}
	}
	return ""
}

func funcKey(d *ast.FuncDecl) string {
	if d.Recv != nil && len(d.Recv.List) > 0 {
		return typeName(d.Recv.List[0].Type) + "." + d.Name.Name
	}
	return d.Name.Name
}

// typeOf is the package type of expression e in env, "" if unknown.
func (c *lockChecker) typeOf(e ast.Expr, env map[string]string) string {
	switch e := e.(type) {
	case *ast.Ident:
		return env[e.Name]
	case *ast.SelectorExpr:
		return c.fields[c.typeOf(e.X, env)][e.Sel.Name]
	case *ast.UnaryExpr:
		return c.typeOf(e.X, env)
	case *ast.StarExpr:
		return c.typeOf(e.X, env)
	case *ast.ParenExpr:
		return c.typeOf(e.X, env)
	}
	return ""
}

// lockOf names the mutex of a call m.Lock(), m.Unlock() and the like:
// the mutex and whether it locks; ok is false for any other call.
func (c *lockChecker) lockOf(call *ast.CallExpr, env map[string]string) (mutex string, lock, ok bool) {
	sel, isSel := call.Fun.(*ast.SelectorExpr)
	if !isSel {
		return "", false, false
	}
	switch sel.Sel.Name {
	case "Lock", "RLock":
		lock = true
	case "Unlock", "RUnlock":
	default:
		return "", false, false
	}
	m, isField := sel.X.(*ast.SelectorExpr)
	if !isField {
		return "", false, false
	}
	owner := c.typeOf(m.X, env)
	if c.fields[owner][m.Sel.Name] != "sync.Mutex" && c.fields[owner][m.Sel.Name] != "sync.RWMutex" {
		if strings.HasSuffix(m.Sel.Name, "mu") {
			c.t.Errorf("%s: cannot name the mutex %s", c.fset.Position(call.Pos()), types(m))
		}
		return "", false, false
	}
	return owner + "." + m.Sel.Name, lock, true
}

func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	}
	return "?"
}

// callee names the package function a call calls, "" if none.
func (c *lockChecker) callee(call *ast.CallExpr, env map[string]string) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		if c.funcs[f.Name] != nil && (f.Obj == nil || f.Obj.Kind == ast.Fun) {
			return f.Name
		}
	case *ast.SelectorExpr:
		if k := c.typeOf(f.X, env) + "." + f.Sel.Name; c.funcs[k] != nil {
			return k
		}
	}
	return ""
}

// isTx reports whether call runs its function literal in a store
// transaction.
func isTx(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	name := ""
	if ok {
		name = sel.Sel.Name
	} else if id, ok := call.Fun.(*ast.Ident); ok {
		name = id.Name
	}
	switch name {
	case "Update", "UpdateShared", "View", "leaderUpdate", "update": // update: handleBatch's choice of the two
		return true
	}
	return false
}

// isLater reports whether call runs its function literal later, in
// another goroutine (time.AfterFunc).
func isLater(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "AfterFunc"
}

// walkBlock walks statements in order with the locks held on entry and
// returns those held on exit, and whether the block ends its path
// (return, panic, continue, break).
func (c *lockChecker) walkBlock(fn string, stmts []ast.Stmt, env map[string]string, held []string) ([]string, bool) {
	for _, s := range stmts {
		var ends bool
		held, ends = c.walkStmt(fn, s, env, held)
		if ends {
			return held, true
		}
	}
	return held, false
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, m := range b {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func (c *lockChecker) walkStmt(fn string, s ast.Stmt, env map[string]string, held []string) ([]string, bool) {
	switch s := s.(type) {
	case *ast.BlockStmt:
		return c.walkBlock(fn, s.List, env, held)
	case *ast.ReturnStmt:
		for _, e := range s.Results {
			held = c.walkExpr(fn, e, env, held)
		}
		return held, true
	case *ast.BranchStmt:
		return held, s.Tok != token.FALLTHROUGH
	case *ast.IfStmt:
		if s.Init != nil {
			held, _ = c.walkStmt(fn, s.Init, env, held)
		}
		held = c.walkExpr(fn, s.Cond, env, held)
		then, thenEnds := c.walkBlock(fn, s.Body.List, env, slices.Clone(held))
		els, elsEnds := held, false
		if s.Else != nil {
			els, elsEnds = c.walkStmt(fn, s.Else, env, slices.Clone(held))
		}
		switch {
		case thenEnds && elsEnds:
			return held, true
		case thenEnds:
			return els, false
		case elsEnds:
			return then, false
		}
		return union(then, els), false
	case *ast.ForStmt:
		if s.Init != nil {
			held, _ = c.walkStmt(fn, s.Init, env, held)
		}
		if s.Cond != nil {
			held = c.walkExpr(fn, s.Cond, env, held)
		}
		body, _ := c.walkBlock(fn, s.Body.List, env, slices.Clone(held))
		return union(held, body), false
	case *ast.RangeStmt:
		held = c.walkExpr(fn, s.X, env, held)
		body, _ := c.walkBlock(fn, s.Body.List, env, slices.Clone(held))
		return union(held, body), false
	case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
		var body *ast.BlockStmt
		switch s := s.(type) {
		case *ast.SwitchStmt:
			if s.Init != nil {
				held, _ = c.walkStmt(fn, s.Init, env, held)
			}
			if s.Tag != nil {
				held = c.walkExpr(fn, s.Tag, env, held)
			}
			body = s.Body
		case *ast.TypeSwitchStmt:
			held, _ = c.walkStmt(fn, s.Assign, env, held)
			body = s.Body
		case *ast.SelectStmt:
			body = s.Body
		}
		out := slices.Clone(held) // no clause taken (no default)
		for _, cl := range body.List {
			var list []ast.Stmt
			h := slices.Clone(held)
			switch cl := cl.(type) {
			case *ast.CaseClause:
				for _, e := range cl.List {
					h = c.walkExpr(fn, e, env, h)
				}
				list = cl.Body
			case *ast.CommClause:
				if cl.Comm != nil {
					h, _ = c.walkStmt(fn, cl.Comm, env, h)
				}
				list = cl.Body
			}
			if h, ends := c.walkBlock(fn, list, env, h); !ends {
				out = union(out, h)
			}
		}
		return out, false
	case *ast.DeferStmt:
		if _, lock, ok := c.lockOf(s.Call, env); ok && !lock {
			return held, false // released when the function returns: held to the end
		}
		return c.walkExpr(fn, s.Call, env, held), false
	case *ast.GoStmt:
		// A new goroutine holds nothing: its function literal is walked
		// on its own, and what it takes is not the caller's.
		if lit, ok := s.Call.Fun.(*ast.FuncLit); ok {
			c.walkBlock(fn+" (goroutine)", lit.Body.List, env, nil)
		}
		return held, false
	case *ast.AssignStmt:
		for _, e := range s.Rhs {
			held = c.walkExpr(fn, e, env, held)
		}
		if s.Tok == token.DEFINE && len(s.Lhs) == len(s.Rhs) {
			for i, l := range s.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					if typ := c.typeOf(s.Rhs[i], env); typ != "" {
						env[id.Name] = typ
					}
				}
			}
		}
		return held, false
	case *ast.ExprStmt:
		held = c.walkExpr(fn, s.X, env, held)
		if call, ok := s.X.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return held, true
			}
		}
		return held, false
	case *ast.DeclStmt, *ast.EmptyStmt, *ast.IncDecStmt, *ast.SendStmt, *ast.LabeledStmt:
		if l, ok := s.(*ast.LabeledStmt); ok {
			return c.walkStmt(fn, l.Stmt, env, held)
		}
		ast.Inspect(s, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok {
				held = c.walkExpr(fn, e, env, held)
				return false
			}
			return true
		})
		return held, false
	}
	return held, false
}

// walkExpr finds the locks taken and released and the calls made in e.
func (c *lockChecker) walkExpr(fn string, e ast.Expr, env map[string]string, held []string) []string {
	if e == nil {
		return held
	}
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			// Called in place (a sort function, a store transaction, a
			// closure): walked as if run here, holding what is held.
			c.walkBlock(fn, n.Body.List, env, slices.Clone(held))
			return false
		case *ast.CallExpr:
			where := c.fset.Position(n.Pos()).String()
			if m, lock, ok := c.lockOf(n, env); ok {
				if lock {
					c.add(c.acquires, fn, m)
					for _, h := range held {
						c.nested = append(c.nested, [4]string{h, m, where, "in " + fn})
					}
					held = append(held, m)
				} else if i := slices.Index(held, m); i >= 0 {
					held = slices.Delete(held, i, i+1)
				}
				return false
			}
			for _, a := range n.Args {
				lit, isLit := a.(*ast.FuncLit)
				if isLit && isLater(n) {
					// Run later by another goroutine, holding nothing.
					c.walkBlock(fn+" (later)", lit.Body.List, env, nil)
					continue
				}
				if isLit && isTx(n) {
					c.add(c.acquires, fn, storeLock)
					for _, h := range held {
						c.nested = append(c.nested, [4]string{h, storeLock, where, "in " + fn})
					}
					c.walkBlock(fn, lit.Body.List, env, append(slices.Clone(held), storeLock))
				} else {
					held = c.walkExpr(fn, a, env, held)
				}
			}
			c.walkExpr(fn, n.Fun, env, held)
			if g := c.callee(n, env); g != "" {
				c.add(c.calls, fn, g)
				if len(held) > 0 {
					c.under = append(c.under, heldCall{held: slices.Clone(held), callee: g, where: where})
				}
			}
			return false
		}
		return true
	})
	return held
}
