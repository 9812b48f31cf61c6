package gates

import (
	"context"
	"fmt"
	"strings"

	"github.com/qim-dev/qim/gates/lint"
)

// lintGate is gate 1: gofmt, go vet, golangci-lint and the contract rules of gates/lint
// (docs/architecture.md, section 7).
type lintGate struct{}

func (lintGate) Name() string  { return "lint" }
func (lintGate) Title() string { return "contract lint: fmt, vet, golangci-lint, check-contract rules" }

func (lintGate) Run(ctx context.Context, env *Env, r *Result) {
	rep, err := lint.Run(ctx, lint.Options{Root: env.Root, Out: env.Progress})
	if err != nil {
		r.Fail(fmt.Errorf("gates: lint: %w", err))
		return
	}
	for _, c := range rep.Checks {
		if c.Skipped {
			// A skipped check is missing evidence: it is recorded as failed, never as passed.
			r.Check(c.Name, false, "skipped: %s", c.Reason)
			continue
		}
		r.Check(c.Name, c.Passed, "%s", findingsDetail(c))
	}
	r.Metric("lint_findings", float64(rep.FindingCount()))
}

func findingsDetail(c lint.Check) string {
	if len(c.Findings) == 0 {
		return fmt.Sprintf("clean in %d ms (%s)", c.DurationMS, c.Reason)
	}
	var b strings.Builder
	for i, f := range c.Findings {
		if i == 50 {
			fmt.Fprintf(&b, "… %d more\n", len(c.Findings)-50)
			break
		}
		fmt.Fprintf(&b, "%s:%d [%s] %s\n", f.File, f.Line, f.Rule, f.Text)
	}
	return b.String()
}
