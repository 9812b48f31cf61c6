package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServedClaimsMatchSources holds the "served" and "sent by" columns of the opcode and error
// tables to the services' code: an opcode is served exactly when some non-test file under
// services/ names its constant, and an error code is sent exactly when one names it. A reserved
// frame that a service starts to send (or stops sending) fails here until its row says so, which
// keeps docs/protocol.md from promising what the server does not do.
func TestServedClaimsMatchSources(t *testing.T) {
	used := contractSelectors(t, filepath.Join("..", "services"))
	ops := constValues(t, "opcode.go", "Op")
	for _, info := range Opcodes() {
		name := nameOf(t, ops, uint64(info.Op), info.Name)
		if refs := used[name]; info.Served != (len(refs) > 0) {
			t.Errorf("opcode %s: row says served=%v, services reference contract.%s in %v", info.Name, info.Served, name, refs)
		}
	}
	codes := constValues(t, "errcode.go", "ErrCode")
	for _, info := range ErrorCodes() {
		name := nameOf(t, codes, uint64(info.Code), info.Name)
		if refs := used[name]; (info.SentBy != "") != (len(refs) > 0) {
			t.Errorf("error %s: row says sent by %q, services reference contract.%s in %v", info.Name, info.SentBy, name, refs)
		}
	}
}

// constValues maps the values of the integer constants of file whose names start with prefix
// to their names.
func constValues(t *testing.T, file, prefix string) map[uint64]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			lit, ok := singleLiteral(vs)
			if !ok || !strings.HasPrefix(vs.Names[0].Name, prefix) {
				continue
			}
			v, err := strconv.ParseUint(lit, 0, 64)
			if err != nil {
				t.Fatalf("%s: %s = %s: %v", file, vs.Names[0].Name, lit, err)
			}
			out[v] = vs.Names[0].Name
		}
	}
	return out
}

func singleLiteral(vs *ast.ValueSpec) (string, bool) {
	if len(vs.Names) != 1 || len(vs.Values) != 1 {
		return "", false
	}
	lit, ok := vs.Values[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return "", false
	}
	return lit.Value, true
}

func nameOf(t *testing.T, names map[uint64]string, v uint64, row string) string {
	t.Helper()
	name, ok := names[v]
	if !ok {
		t.Fatalf("row %s has no constant declared with value %#x", row, v)
	}
	return name
}

// contractSelectors returns, for every contract.X named in a non-test Go file under dir, the
// files that name it. It parses rather than greps, so comments and strings do not count.
func contractSelectors(t *testing.T, dir string) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "contract" {
					used[sel.Sel.Name] = append(used[sel.Sel.Name], filepath.ToSlash(path))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}
