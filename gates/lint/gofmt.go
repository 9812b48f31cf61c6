package lint

import (
	"bytes"
	"context"
	"go/format"
	"strings"
)

// gofmtBatch bounds the argument list of one gofmt call well below the OS limit.
const gofmtBatch = 200

// checkGofmt runs `gofmt -l` over every listed .go file (generated ones too: generators emit
// gofmt'd code, and a hand edit to a generated file is exactly what should show up). Syntax
// errors are findings as well, since an unparsable file cannot be formatted.
func checkGofmt(ctx context.Context, e *env) []Finding {
	var files []string
	for _, p := range e.files {
		if isGoSource(p) {
			files = append(files, p)
		}
	}
	var out []Finding
	for start := 0; start < len(files); start += gofmtBatch {
		batch := files[start:min(start+gofmtBatch, len(files))]
		res := runTool(ctx, e.root, nil, "gofmt", append([]string{"-l"}, batch...)...)
		if res.startErr != nil {
			return append(out, toolFinding("gofmt", "gofmt could not run", res))
		}
		found := parseDiagnostics(e.root, "gofmt", res.stderr)
		for _, p := range strings.Fields(res.stdout) {
			p = relPath(e.root, p)
			found = append(found, Finding{File: p, Line: e.firstUnformattedLine(p), Rule: "gofmt",
				Text: "not gofmt-formatted; run gofmt -w " + p})
		}
		if res.exit != 0 && len(found) == 0 {
			found = append(found, toolFinding("gofmt", "gofmt failed", res))
		}
		out = append(out, found...)
	}
	return out
}

// firstUnformattedLine points the finding at the first line gofmt would change (0 if unknown),
// computed in-process with go/format, which applies the same canonical layout as gofmt.
func (e *env) firstUnformattedLine(p string) int {
	src, err := e.read(p)
	if err != nil {
		return 0
	}
	formatted, err := format.Source(src)
	if err != nil {
		return 0
	}
	n := min(len(src), len(formatted))
	i := 0
	for i < n && src[i] == formatted[i] {
		i++
	}
	if i == len(src) && i == len(formatted) {
		return 0
	}
	return bytes.Count(src[:i], []byte("\n")) + 1
}
