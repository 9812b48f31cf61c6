package lint

import (
	"context"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// contractPrefix is the common prefix of Q-IM's topic names and domain-separation strings.
const contractPrefix = "qim" + "."

// contractTopics are the Kafka topic names; spelled from parts so this file is not a violation.
var contractTopics = map[string]bool{contractPrefix + "outbox": true, contractPrefix + "dispatch": true}

// domainString matches versioned domain-separation strings such as "qim.group-dispatch.v1", with
// or without the NUL terminator contract/ gives them. The bare protobuf package name ("qim.v1")
// does not match: it needs a component before the version.
var domainString = regexp.MustCompile(`^qim\.[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*\.v[0-9]+\x00?$`)

// protoPackage finds a .proto file's package clause.
var protoPackage = regexp.MustCompile(`(?m)^\s*package\s+([A-Za-z0-9_.]+)\s*;`)

// contractNames is what contract/ declares: its exported constant names and the values of its
// string constants that carry the qim. prefix (so a topic added there is protected at once).
// protoPkgs are the .proto package names ("qim.internal.v1"): shaped like domain strings, but
// owned by the .proto files, so naming them in Go is not a copy of a contract constant.
type contractNames struct {
	consts    map[string]bool
	strings   map[string]bool
	protoPkgs map[string]bool
}

// checkContractConstants keeps the contract's numbers and names in contract/ alone. A value
// copied into a service drifts silently when the contract changes (a re-declared lane count
// routes to the wrong partition, a misspelt domain string makes signatures unverifiable), while an
// import breaks the build. Flagged in non-test, non-generated Go outside contract/:
//
//   - a const whose name is an exported constant of contract/, unless its value is that contract
//     constant (re-exporting contract.X keeps one source of truth; copying the value does not);
//   - a string literal equal to a Kafka topic name, to a qim.-prefixed string constant of
//     contract/, or shaped like a versioned domain string (qim.<name>.v<N>) and not the package
//     name of a .proto file in the tree.
//
// Only single literals are checked, not concatenations, so the rule stays exact. Exceptions (for
// example a test stack that creates the topics) go in allow.txt with their reason.
func checkContractConstants(_ context.Context, e *env) []Finding {
	var out []Finding
	names := contractDecls(e)
	keep := func(p string) bool { return !under(p, "contract") && !isTest(p) }
	for _, gf := range e.goFiles(keep) {
		if gf.err != nil {
			out = append(out, gf.parseFinding("contract-constants"))
			continue
		}
		if gf.generated() {
			continue
		}
		out = append(out, constFindings(gf, names)...)
	}
	return out
}

// contractDecls collects declarations from contract/ (top-level package only, tests excluded).
// A contract file that does not parse contributes nothing here; gofmt and vet report it.
func contractDecls(e *env) contractNames {
	names := contractNames{consts: map[string]bool{}, strings: map[string]bool{}, protoPkgs: protoPackages(e)}
	inContract := func(p string) bool {
		return under(p, "contract") && !strings.Contains(strings.TrimPrefix(p, "contract/"), "/") && !isTest(p)
	}
	for _, gf := range e.goFiles(inContract) {
		if gf.file == nil {
			continue
		}
		for _, decl := range gf.file.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				names.addConsts(gd)
			}
		}
	}
	return names
}

func (n contractNames) addConsts(gd *ast.GenDecl) {
	for _, spec := range gd.Specs {
		vs := spec.(*ast.ValueSpec)
		for i, id := range vs.Names {
			if !id.IsExported() {
				continue
			}
			n.consts[id.Name] = true
			if i < len(vs.Values) {
				if s, ok := literalString(vs.Values[i]); ok && strings.HasPrefix(s, contractPrefix) {
					n.strings[s] = true
				}
			}
		}
	}
}

func constFindings(gf *goFile, names contractNames) []Finding {
	var out []Finding
	add := func(pos token.Pos, text string) {
		out = append(out, Finding{File: gf.path, Line: gf.line(pos), Rule: "contract-constants", Text: text})
	}
	ast.Inspect(gf.file, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.GenDecl:
			if x.Tok == token.CONST {
				for _, id := range redeclared(x, names, contractImport(gf.file)) {
					add(id.Pos(), "const "+quote(id.Name)+" re-declares contract."+id.Name+
						"; use contract."+id.Name+" (a re-export `= contract."+id.Name+"` is fine)")
				}
			}
		case *ast.BasicLit:
			if s, ok := literalString(x); ok && names.isContractString(s) {
				add(x.Pos(), "literal "+strconv.Quote(s)+" is a contract name; use the constant from contract/")
			}
		}
		return true
	})
	return out
}

func (n contractNames) isContractString(s string) bool {
	return contractTopics[s] || n.strings[s] || (domainString.MatchString(s) && !n.protoPkgs[s])
}

func protoPackages(e *env) map[string]bool {
	pkgs := map[string]bool{}
	for _, p := range e.files {
		if !strings.HasSuffix(p, ".proto") {
			continue
		}
		if data, err := e.read(p); err == nil {
			for _, m := range protoPackage.FindAllSubmatch(data, -1) {
				pkgs[string(m[1])] = true
			}
		}
	}
	return pkgs
}

// redeclared returns the consts of gd named like a contract constant, except re-exports
// (const LaneCount = contract.LaneCount), which cannot drift from the contract.
func redeclared(gd *ast.GenDecl, names contractNames, contractPkg string) []*ast.Ident {
	var ids []*ast.Ident
	for _, spec := range gd.Specs {
		vs := spec.(*ast.ValueSpec)
		for i, id := range vs.Names {
			if !names.consts[id.Name] || (i < len(vs.Values) && isContractRef(vs.Values[i], contractPkg)) {
				continue
			}
			ids = append(ids, id)
		}
	}
	return ids
}

// contractModule is the import path the re-export exception recognises.
const contractModule = "github.com/qim-dev/qim/contract"

// contractImport is the file's local name for the contract package, or "" if it does not import it.
func contractImport(f *ast.File) string {
	for _, imp := range f.Imports {
		if path, err := strconv.Unquote(imp.Path.Value); err != nil || path != contractModule {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return "contract"
	}
	return ""
}

func isContractRef(expr ast.Expr, contractPkg string) bool {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok || contractPkg == "" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == contractPkg
}

// literalString is the value of a single string literal (no folding, see checkContractConstants).
func literalString(expr ast.Expr) (string, bool) {
	lit, ok := expr.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
