package lint

import (
	"context"
	"go/ast"
	"strings"
)

// checkSecretLogging flags log calls that pass a token, key, password, body or payload. Logs
// outlive the TTLs and crypto-erase that remove messages and are read by more people than the
// store, so a body or credential in a log is a leak the product cannot take back. Flagged in
// non-test, non-generated Go under services/, sdk/ and cmd/: a call to log.*, slog.*, a logger
// method (Info, Errorf, With, ... on a receiver named like a logger) or fmt.Fprint* to os.Stderr
// whose arguments contain a sensitive name, unless that name is wrapped in obs.SecretDigest,
// obs.BodyShape, obs.TextShape, len or cap.
//
// Matching is by name only (no type information), word by word: a name is sensitive when one of
// its words is token, secret, password, body or payload (or a plural or common abbreviation), or
// when it is key, apiKey, secretKey, privateKey, signingKey or hmacKey, and its last word is not
// metadata about the value (tokenID, bodyLen, payloadType are fine). False-positive policy: if a
// flagged value is not secret (a Redis key name, say), rename it (redisKey is not flagged) or
// wrap it; allow.txt is the last resort.
func checkSecretLogging(_ context.Context, e *env) []Finding {
	var out []Finding
	keep := func(p string) bool { return underAny(p, "services", "sdk", "cmd") && !isTest(p) }
	for _, gf := range e.goFiles(keep) {
		if gf.err != nil {
			out = append(out, gf.parseFinding("secret-logging"))
			continue
		}
		if gf.generated() {
			continue
		}
		out = append(out, secretLogFindings(gf)...)
	}
	return out
}

func secretLogFindings(gf *goFile) []Finding {
	var out []Finding
	ast.Inspect(gf.file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		args, ok := loggedArgs(call)
		if !ok {
			return true
		}
		for _, a := range args {
			for _, leak := range sensitiveRefs(a) {
				out = append(out, Finding{File: gf.path, Line: gf.line(leak.Pos()), Rule: "secret-logging",
					Text: "log call passes " + quote(exprText(leak)) +
						"; wrap it in obs.SecretDigest/BodyShape/TextShape, or rename it if it is not secret"})
			}
		}
		return false // nested calls are arguments of this one and were walked above
	})
	return out
}

var (
	logPkgFuncs = words("Print Printf Println Fatal Fatalf Fatalln Panic Panicf Panicln Output")
	slogFuncs   = words("Debug Info Warn Error DebugContext InfoContext WarnContext ErrorContext Log LogAttrs String Any Group With")
	loggerFuncs = words("Debug Info Warn Error Debugf Infof Warnf Errorf Warning Warningf DebugContext InfoContext " +
		"WarnContext ErrorContext Log LogAttrs Print Printf Println Fatal Fatalf Fatalln Panic Panicf Panicln With")
	fprintFuncs = words("Fprint Fprintf Fprintln")
	// loggerWords name a receiver that is a logger (logger, log, slog, s.log(), reqLogger); "l"
	// and "lg" are the usual one-letter logger variables.
	loggerWords = words("log logger slog logging")
)

// loggedArgs returns the arguments a call sends to a log, or false if it is not a log call.
func loggedArgs(call *ast.CallExpr) ([]ast.Expr, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	pkg, _ := sel.X.(*ast.Ident)
	name := sel.Sel.Name
	switch {
	case pkg != nil && pkg.Name == "log" && logPkgFuncs[name]:
		return call.Args, true
	case pkg != nil && pkg.Name == "slog" && slogFuncs[name]:
		return call.Args, true
	case pkg != nil && pkg.Name == "fmt" && fprintFuncs[name]:
		if len(call.Args) > 0 && exprText(call.Args[0]) == "os.Stderr" {
			return call.Args[1:], true
		}
		return nil, false
	case loggerFuncs[name] && isLoggerReceiver(sel.X):
		return call.Args, true
	}
	return nil, false
}

func isLoggerReceiver(x ast.Expr) bool {
	if call, ok := x.(*ast.CallExpr); ok {
		x = call.Fun // s.log().Info(...)
	}
	name := lastName(x)
	if name == "l" || name == "lg" {
		return true
	}
	for _, w := range splitWords(name) {
		if loggerWords[w] {
			return true
		}
	}
	return false
}

// redactors make a value safe to log; their arguments are not inspected.
var redactors = words("SecretDigest BodyShape TextShape len cap")

// sensitiveRefs walks a logged argument and returns every reference to a sensitive name that
// reaches the log unredacted. It follows values that carry content (concatenation, slicing,
// conversions, String()/Bytes(), arguments of formatting or encoding calls) and stops at names
// used only as a path (token.Subject logs the subject, not the token).
func sensitiveRefs(expr ast.Expr) []ast.Expr {
	switch x := expr.(type) {
	case *ast.Ident:
		return refIf(x, x.Name)
	case *ast.SelectorExpr:
		return refIf(x, x.Sel.Name)
	case *ast.CallExpr:
		return callRefs(x)
	case *ast.BinaryExpr:
		return append(sensitiveRefs(x.X), sensitiveRefs(x.Y)...)
	case *ast.ParenExpr:
		return sensitiveRefs(x.X)
	case *ast.StarExpr:
		return sensitiveRefs(x.X)
	case *ast.UnaryExpr:
		return sensitiveRefs(x.X)
	case *ast.IndexExpr:
		return sensitiveRefs(x.X)
	case *ast.SliceExpr:
		return sensitiveRefs(x.X)
	case *ast.TypeAssertExpr:
		return sensitiveRefs(x.X)
	case *ast.KeyValueExpr:
		return sensitiveRefs(x.Value)
	case *ast.CompositeLit:
		var refs []ast.Expr
		for _, el := range x.Elts {
			refs = append(refs, sensitiveRefs(el)...)
		}
		return refs
	}
	return nil // literals, closures, types
}

func callRefs(call *ast.CallExpr) []ast.Expr {
	if redactors[lastName(call.Fun)] {
		return nil
	}
	if arg, ok := conversionArg(call); ok {
		return sensitiveRefs(arg)
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok && len(call.Args) == 0 &&
		(sel.Sel.Name == "String" || sel.Sel.Name == "Bytes") {
		return sensitiveRefs(sel.X) // tok.String() is the token
	}
	var refs []ast.Expr
	for _, a := range call.Args {
		refs = append(refs, sensitiveRefs(a)...)
	}
	return refs
}

func refIf(expr ast.Expr, name string) []ast.Expr {
	if isSensitiveName(name) {
		return []ast.Expr{expr}
	}
	return nil
}

var (
	secretWords = words("token tokens tok secret secrets password passwords passwd pwd body bodies payload payloads")
	// keyQualifiers make "key" a credential; alone, "key" is also flagged (it is too often one).
	keyQualifiers = words("api secret private signing hmac")
	// metadataWords end names that describe a sensitive value without carrying it.
	metadataWords = words("len length size count n id ids type kind digest hash shape version ttl expiry " +
		"expires exp at seq max min limit name names ok err error present set valid")
)

func isSensitiveName(name string) bool {
	ws := splitWords(name)
	if len(ws) == 0 || metadataWords[ws[len(ws)-1]] {
		return false
	}
	if len(ws) == 1 && (ws[0] == "key" || ws[0] == "keys") {
		return true
	}
	for i, w := range ws {
		if secretWords[w] {
			return true
		}
		if (w == "key" || w == "keys") && i > 0 && keyQualifiers[ws[i-1]] {
			return true
		}
	}
	return false
}

// exprText renders a name path (a.b.c) for messages; other expressions render as "…".
func exprText(expr ast.Expr) string {
	switch x := expr.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	}
	return "…"
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}
