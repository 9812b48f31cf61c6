package lint

import (
	"bufio"
	"bytes"
	"context"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// cqlDelete matches the statement in any case and across line breaks inside one literal.
var cqlDelete = regexp.MustCompile(`(?i)\bdelete\s+from\b`)

// checkCQLDelete flags CQL DELETE statements in store code under services/. A CQL DELETE writes a
// tombstone that every read must skip until compaction, and mass deletes are the classic cause of
// tombstone-overwhelm read failures; the contract removes data only by TTL (expiry the storage
// engine handles on its own schedule) or crypto-erase (dropping the key makes the bytes unreadable).
// In Go, string literals and constant concatenations of them are checked; .cql and .lua files are
// checked line by line, skipping comment lines.
func checkCQLDelete(_ context.Context, e *env) []Finding {
	var out []Finding
	for _, gf := range e.goFiles(func(p string) bool { return under(p, "services") && !isTest(p) }) {
		if gf.err != nil {
			out = append(out, gf.parseFinding("cql-delete"))
			continue
		}
		out = append(out, goDeletes(gf)...)
	}
	for _, p := range e.files {
		if !under(p, "services") || !isStoreScript(p) {
			continue
		}
		data, err := e.read(p)
		if err != nil {
			out = append(out, Finding{File: p, Rule: "cql-delete", Text: err.Error()})
			continue
		}
		out = append(out, scriptDeletes(p, data)...)
	}
	return out
}

func goDeletes(gf *goFile) []Finding {
	var out []Finding
	ast.Inspect(gf.file, func(n ast.Node) bool {
		expr, ok := n.(ast.Expr)
		if !ok {
			return true
		}
		s, raw, ok := stringValue(expr)
		if !ok {
			return true
		}
		if loc := cqlDelete.FindStringIndex(s); loc != nil {
			line := gf.line(expr.Pos())
			if raw {
				line += strings.Count(s[:loc[0]], "\n")
			}
			out = append(out, Finding{File: gf.path, Line: line, Rule: "cql-delete",
				Text: "CQL DELETE in store code; expire rows by TTL or crypto-erase them"})
		}
		return false // the whole constant was checked; its parts would only repeat the finding
	})
	return out
}

// stringValue folds a string literal, or a + chain of them, into its value. raw is true when the
// value's line breaks are real source lines (a single raw literal), so match offsets map to lines.
func stringValue(expr ast.Expr) (s string, raw bool, ok bool) {
	switch x := expr.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false, false
		}
		v, err := strconv.Unquote(x.Value)
		return v, strings.HasPrefix(x.Value, "`"), err == nil
	case *ast.ParenExpr:
		return stringValue(x.X)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false, false
		}
		l, _, lok := stringValue(x.X)
		r, _, rok := stringValue(x.Y)
		return l + r, false, lok && rok
	}
	return "", false, false
}

func scriptDeletes(p string, data []byte) []Finding {
	var out []Finding
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "--") || strings.HasPrefix(line, "//") {
			continue
		}
		if cqlDelete.MatchString(line) {
			out = append(out, Finding{File: p, Line: n, Rule: "cql-delete",
				Text: "CQL DELETE in store script; expire rows by TTL or crypto-erase them"})
		}
	}
	return out
}

func isStoreScript(p string) bool {
	return strings.HasSuffix(p, ".cql") || strings.HasSuffix(p, ".lua")
}
