package lint

import (
	"context"
	"go/ast"
	"go/token"
)

// checkUnreadSubtraction flags unread counts computed by subtracting a read position from a
// latest position. conversation_seq has holes (recalled and deleted messages keep their seq but
// are not unread) and a user's own messages advance it too, so latest-read over-counts; the
// contract keeps an explicit unread counter instead. Flagged in non-test Go under services/ and
// sdk/:
//
//   - a - b where a's name has a word latest/last/max and b's name has the word read
//     (s.LatestSeq - s.ReadSeq, maxSeq - readSeq, int64(lastSeq) - cur.ReadSeq);
//   - assigning a subtraction to a name starting with unread (unread := a - b, Unread: a - b,
//     var unreadCount = a - b), also through parentheses, conversions and max/min;
//   - returning a subtraction from a function whose name starts with unread.
//
// Names are matched as words, so "thread" is not "read". A false positive (buffer arithmetic such
// as maxLen - bytesRead) is fixed by a clearer name (limit - consumed) or an allow.txt entry.
func checkUnreadSubtraction(_ context.Context, e *env) []Finding {
	var out []Finding
	keep := func(p string) bool { return underAny(p, "services", "sdk") && !isTest(p) }
	for _, gf := range e.goFiles(keep) {
		if gf.err != nil {
			out = append(out, gf.parseFinding("unread-subtraction"))
			continue
		}
		if gf.generated() {
			continue
		}
		out = append(out, unreadFindings(gf)...)
	}
	return out
}

type unreadScan struct {
	gf       *goFile
	reported map[token.Pos]bool // subtractions already reported by an assignment pattern
	out      []Finding
}

func unreadFindings(gf *goFile) []Finding {
	s := &unreadScan{gf: gf, reported: map[token.Pos]bool{}}
	ast.Inspect(gf.file, s.visit)
	return s.out
}

func (s *unreadScan) visit(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.AssignStmt:
		if x.Tok == token.ASSIGN || x.Tok == token.DEFINE {
			s.pairs(x.Lhs, x.Rhs)
		}
	case *ast.ValueSpec:
		names := make([]ast.Expr, len(x.Names))
		for i, id := range x.Names {
			names[i] = id
		}
		s.pairs(names, x.Values)
	case *ast.KeyValueExpr:
		s.pairs([]ast.Expr{x.Key}, []ast.Expr{x.Value})
	case *ast.FuncDecl:
		if x.Body != nil && hasWordPrefix(splitWords(x.Name.Name), "unread") {
			s.returns(x.Body)
		}
	case *ast.BinaryExpr:
		s.subtraction(x)
	}
	return true
}

// pairs checks lhs[i] = rhs[i]; a multi-value right side (a call) has no subtraction to see.
func (s *unreadScan) pairs(lhs, rhs []ast.Expr) {
	if len(lhs) != len(rhs) {
		return
	}
	for i, l := range lhs {
		if hasWordPrefix(exprWords(l), "unread") {
			if sub := findSub(rhs[i]); sub != nil {
				s.report(sub, "unread "+quote(lastName(l))+" computed by subtraction")
			}
		}
	}
}

func (s *unreadScan) returns(body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false // a closure's returns are not the unread function's result
		}
		if ret, ok := n.(*ast.ReturnStmt); ok {
			for _, r := range ret.Results {
				if sub := findSub(r); sub != nil {
					s.report(sub, "unread function returns a subtraction")
				}
			}
		}
		return true
	})
}

func (s *unreadScan) subtraction(x *ast.BinaryExpr) {
	if x.Op != token.SUB || s.reported[x.Pos()] {
		return
	}
	if hasWord(exprWords(x.X), "latest", "last", "max") && hasWord(exprWords(x.Y), "read") {
		s.report(x, "latest/last/max minus read position used as a count")
	}
}

func (s *unreadScan) report(sub *ast.BinaryExpr, what string) {
	s.reported[sub.Pos()] = true
	s.out = append(s.out, Finding{File: s.gf.path, Line: s.gf.line(sub.Pos()), Rule: "unread-subtraction",
		Text: what + "; conversation_seq has holes, keep an unread counter instead"})
}

// findSub returns the subtraction an expression evaluates to, looking through parentheses,
// conversions and max/min clamps (max(0, latest-read) is still a subtraction).
func findSub(expr ast.Expr) *ast.BinaryExpr {
	switch x := expr.(type) {
	case *ast.BinaryExpr:
		if x.Op == token.SUB {
			return x
		}
	case *ast.ParenExpr:
		return findSub(x.X)
	case *ast.CallExpr:
		if arg, ok := conversionArg(x); ok {
			return findSub(arg)
		}
		if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "max" || id.Name == "min") {
			for _, a := range x.Args {
				if sub := findSub(a); sub != nil {
					return sub
				}
			}
		}
	}
	return nil
}
