package lint

import (
	"go/ast"
	"strings"
	"unicode"
)

// The AST rules match names, not types: they must work on a tree that does not type-check (other
// engineers' packages mid-edit) and must be cheap. Names are compared word by word, so "thread"
// never matches "read" and "climax" never matches "max".

// splitWords splits an identifier into lower-case words at camelCase, acronym and underscore
// boundaries: "APIKey" → [api key], "lastReadSeq" → [last read seq], "access_token" → [access token].
func splitWords(name string) []string {
	var words []string
	runes := []rune(name)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, strings.ToLower(string(runes[start:end])))
		}
		start = -1
	}
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush(i)
		case start < 0:
			start = i
		case unicode.IsUpper(r) && !unicode.IsUpper(runes[i-1]):
			flush(i)
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(runes[i-1]) && i-1 > start:
			flush(i - 1) // "APIKey": the K starts the next word, not the acronym
			start = i - 1
		}
	}
	flush(len(runes))
	return words
}

// conversions are the call forms that only change a value's type, so the name of their argument
// is the name of the expression (int64(s.LastSeq) is still "last seq").
var conversions = map[string]bool{"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "float32": true,
	"float64": true, "string": true, "byte": true, "rune": true}

// exprWords returns the words of every name along an expression's path: s.Latest.Seq gives
// [s latest seq], s.LastSeq() gives [s last seq], int64(readSeq) gives [read seq].
func exprWords(expr ast.Expr) []string {
	switch x := expr.(type) {
	case *ast.Ident:
		return splitWords(x.Name)
	case *ast.SelectorExpr:
		return append(exprWords(x.X), splitWords(x.Sel.Name)...)
	case *ast.CallExpr:
		if arg, ok := conversionArg(x); ok {
			return exprWords(arg)
		}
		return exprWords(x.Fun)
	case *ast.ParenExpr:
		return exprWords(x.X)
	case *ast.StarExpr:
		return exprWords(x.X)
	case *ast.UnaryExpr:
		return exprWords(x.X)
	case *ast.IndexExpr:
		return exprWords(x.X)
	case *ast.IndexListExpr:
		return exprWords(x.X)
	}
	return nil
}

// conversionArg returns the operand of a basic-type conversion such as int64(x) or []byte(x).
func conversionArg(call *ast.CallExpr) (ast.Expr, bool) {
	if len(call.Args) != 1 {
		return nil, false
	}
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return call.Args[0], conversions[f.Name]
	case *ast.ArrayType:
		id, ok := f.Elt.(*ast.Ident)
		return call.Args[0], ok && f.Len == nil && (id.Name == "byte" || id.Name == "rune")
	}
	return nil, false
}

// lastName is the final name of an expression: the identifier, or the selector's field or method.
func lastName(expr ast.Expr) string {
	switch x := expr.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.ParenExpr:
		return lastName(x.X)
	case *ast.StarExpr:
		return lastName(x.X)
	case *ast.IndexExpr:
		return lastName(x.X) // generic instantiation: obs.SecretDigest[string]
	case *ast.IndexListExpr:
		return lastName(x.X)
	}
	return ""
}

// hasWord reports whether any word equals one of want, or is one of want run together with "seq"
// (all-lower-case names such as "readseq" do not split).
func hasWord(words []string, want ...string) bool {
	for _, w := range words {
		for _, x := range want {
			if w == x || w == x+"seq" {
				return true
			}
		}
	}
	return false
}

// hasWordPrefix reports whether any word starts with prefix ("unreadcount" starts with "unread").
func hasWordPrefix(words []string, prefix string) bool {
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}
