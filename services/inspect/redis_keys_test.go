package inspect

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

// Every family is declared once, and its example key belongs to it alone among all owners'
// families: two stores' layouts (such as the gateway's qim:sess:<tenant>:… and the session's
// qim:sess:list:…) cannot overlap, so the gate's classification is unambiguous.
func TestRedisKeyFamiliesAreDisjoint(t *testing.T) {
	fams := RedisKeyFamilies()
	seen := map[string]bool{}
	for _, f := range fams {
		if seen[f.Name] {
			t.Errorf("family %s declared twice", f.Name)
		}
		seen[f.Name] = true
		var in []string
		for _, g := range fams {
			if g.Match(f.Example) {
				in = append(in, g.Name)
			}
		}
		if len(in) != 1 || in[0] != f.Name {
			t.Errorf("example %q of %s belongs to %v", f.Example, f.Name, in)
		}
	}
	if !seen["msgstore.history_record"] || !seen["mailboxstore.day_bucket"] || !seen["gateway.session_epoch"] {
		t.Fatalf("families %v lack a store", seen)
	}
}

// TestEveryKeyPrefixHasAFamily parses the services' code: every string literal that starts a
// Redis key name ("qim:…") must be the prefix of a declared family (or a family's layout, the
// declaration itself), so a store cannot add a key layout the gate would first meet as unknown.
func TestEveryKeyPrefixHasAFamily(t *testing.T) {
	known := map[string]bool{}
	for _, f := range RedisKeyFamilies() {
		known[f.f.Prefix], known[f.Layout] = true, true
	}
	found := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error { // every service
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !strings.HasPrefix(v, "qim:") {
				return true
			}
			found++
			if !known[v] {
				t.Errorf("%s: key prefix %q belongs to no family: declare it in its store's KeyFamilies", fset.Position(lit.Pos()), v)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < len(RedisKeyFamilies()) {
		t.Fatalf("found %d key literals for %d families: the scan is blind", found, len(RedisKeyFamilies()))
	}
}
