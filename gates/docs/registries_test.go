package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/chaos"
	"github.com/qim-dev/qim/gates/e2e"
	"github.com/qim-dev/qim/gates/release"
)

// e2eLists are the scenario lists of package e2e by name. Gate 4 assembles its run from them
// inside package gates, unexported, so gateScenarios reads which ones it calls from its source;
// a list the gate calls and this map lacks fails the test instead of going uncounted.
var e2eLists = map[string]func() []e2e.Scenario{
	"InstancesScenarios":  e2e.InstancesScenarios,
	"Scenarios":           e2e.Scenarios,
	"IdentityScenarios":   e2e.IdentityScenarios,
	"SessionScenarios":    e2e.SessionScenarios,
	"GroupScenarios":      e2e.GroupScenarios,
	"RoomScenarios":       e2e.RoomScenarios,
	"SDKScenarios":        e2e.SDKScenarios,
	"SDKSessionScenarios": e2e.SDKSessionScenarios,
	"ProductScenarios":    e2e.ProductScenarios,
	"TieredScenarios":     e2e.TieredScenarios,
}

// gateE2ESource is the file whose e2e.*Scenarios() calls are gate 4's run.
var gateE2ESource = filepath.Join("..", "gate_e2e.go")

// gateScenarios returns the scenarios gate 4 runs, in its order.
func gateScenarios(t *testing.T) []e2e.Scenario {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), gateE2ESource, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []e2e.Scenario
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !isIdent(sel.X, "e2e") || !strings.HasSuffix(sel.Sel.Name, "Scenarios") {
			return true
		}
		list, known := e2eLists[sel.Sel.Name]
		if !known {
			t.Fatalf("%s runs e2e.%s(), which e2eLists lacks: add it", gateE2ESource, sel.Sel.Name)
		}
		out = append(out, list()...)
		return true
	})
	if len(out) == 0 {
		t.Fatalf("%s calls no e2e.*Scenarios(): the count of gate 4 would be blind", gateE2ESource)
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func withPrefix(scenarios []e2e.Scenario, prefix string) int {
	n := 0
	for _, s := range scenarios {
		if strings.HasPrefix(s.Name, prefix) {
			n++
		}
	}
	return n
}

func cellsWhere(keep func(chaos.Cell) bool) int {
	n := 0
	for _, c := range chaos.Cells() {
		if keep(c) {
			n++
		}
	}
	return n
}

func servedOpcodes() int {
	n := 0
	for _, o := range contract.Opcodes() {
		if o.Served {
			n++
		}
	}
	return n
}

func gateNames() []string {
	var names []string
	for _, g := range release.Registry() {
		names = append(names, g.Name())
	}
	return names
}
