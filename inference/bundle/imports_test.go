package bundle

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStdlibOnly: the bundle package runs on the gateway and may import the
// standard library and package inference only (internal/layering checks the
// same from the real import graph; this one also runs on the ARM targets).
func TestStdlibOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != "github.com/trit-iot/trit/inference" {
				t.Errorf("%s imports %s: only the standard library and inference are allowed", name, path)
			}
		}
	}
}
