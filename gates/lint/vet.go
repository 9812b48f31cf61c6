package lint

import (
	"context"
	"strings"
)

// checkVet runs `go vet` on every module the root builds (modulePattern) in the root. Every diagnostic becomes a finding; a failure without
// diagnostics (no go.mod, a package that does not build in a way vet cannot attribute) becomes one
// finding carrying the tool's output, never a pass.
func checkVet(ctx context.Context, e *env) []Finding {
	res := runTool(ctx, e.root, nil, "go", "vet", modulePattern(ctx, e.root))
	if res.startErr != nil {
		return []Finding{toolFinding("vet", "go vet could not run", res)}
	}
	out := parseDiagnostics(e.root, "vet", res.stderr)
	if res.exit != 0 && len(out) == 0 {
		out = append(out, toolFinding("vet", "go vet failed", res))
	}
	if res.exit == 0 && strings.Contains(res.stderr, "matched no packages") {
		out = append(out, Finding{Rule: "vet", Text: "go vet matched no packages under the root"})
	}
	return out
}
