package lint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Options configures one Run.
type Options struct {
	Root string    // repository root; "" means the current directory
	Out  io.Writer // progress lines (tool installs, which check runs); nil discards them
	// Skip names checks to leave out; they appear in the report as skipped, never as passed.
	Skip []string
	// Only, when non-empty, runs just these checks (the rest are reported as skipped).
	Only []string
	// NoInstall forbids installing golangci-lint when it is missing; the check then fails.
	NoInstall bool
}

// Finding is one violation. File is slash-separated and relative to Root; it is empty, with Line
// 0, when the finding is about the check itself (a tool that could not run).
type Finding struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Rule string `json:"rule"`
	Text string `json:"text"`
}

// Check is the outcome of one named check. Passed is true exactly when the check ran and has no
// findings; a skipped check is neither passed nor failed and is marked Skipped.
type Check struct {
	Name       string    `json:"name"`
	Reason     string    `json:"reason"`
	Passed     bool      `json:"passed"`
	Skipped    bool      `json:"skipped,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	Findings   []Finding `json:"findings"`
}

// Report is the result of Run; it is what gate 1 stores as JSON.
type Report struct {
	Root   string  `json:"root"`
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
}

// FindingCount is the number of findings over all checks.
func (r Report) FindingCount() int {
	n := 0
	for _, c := range r.Checks {
		n += len(c.Findings)
	}
	return n
}

// checker is one named check. Source rules receive findings already filtered by the allowlist;
// tool checks are not allowlistable (the tools have their own, reviewed, suppression syntax).
type checker struct {
	name        string
	reason      string
	allowlisted bool
	run         func(ctx context.Context, e *env) []Finding
}

// checkers lists every check in run order: cheap source rules first so a broken tree reports its
// contract violations even if the slow tool checks time out.
func checkers() []checker {
	cs := []checker{
		{name: "gofmt", reason: "one canonical layout keeps diffs about behaviour", run: checkGofmt},
		{name: "vet", reason: "go vet catches misuse the compiler accepts", run: checkVet},
		{name: "golangci", reason: "staticcheck-class bugs (unchecked errors, dead code, error wrapping)", run: checkGolangci},
	}
	return append(sourceRules(), append(cs, checker{
		name: "allowlist", reason: "every exception is valid, explained and still needed", run: checkAllowlist,
	})...)
}

// CheckNames returns the names Skip and Only accept, in run order.
func CheckNames() []string {
	var names []string
	for _, c := range checkers() {
		names = append(names, c.name)
	}
	return names
}

// Run executes the selected checks over opts.Root. It returns an error only when the run itself is
// impossible (bad options, unreadable root, cancelled context); everything about the tree, tools
// included, is reported as findings.
func Run(ctx context.Context, opts Options) (Report, error) {
	e, err := newEnv(ctx, opts)
	if err != nil {
		return Report{}, err
	}
	selected, err := selection(opts)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Root: e.root, Passed: true}
	ran := 0
	for _, c := range checkers() {
		if err := ctx.Err(); err != nil {
			return Report{}, fmt.Errorf("lint: %w", err)
		}
		check := runOne(ctx, e, c, selected[c.name])
		rep.Passed = rep.Passed && (check.Passed || check.Skipped)
		rep.Checks = append(rep.Checks, check)
		if !check.Skipped {
			ran++
		}
	}
	// A run that checked nothing produced no evidence, and no evidence is not a pass.
	rep.Passed = rep.Passed && ran > 0
	return rep, nil
}

func runOne(ctx context.Context, e *env, c checker, selected bool) Check {
	check := Check{Name: c.name, Reason: c.reason, Findings: []Finding{}}
	if !selected {
		check.Skipped = true
		return check
	}
	e.ran[c.name] = true
	e.progressf("lint: running %s", c.name)
	start := time.Now()
	findings := c.run(ctx, e)
	if c.allowlisted {
		findings = e.allow.filter(c.name, findings)
	}
	check.DurationMS = time.Since(start).Milliseconds()
	check.Findings = append(check.Findings, dedupe(findings)...)
	check.Passed = len(check.Findings) == 0
	return check
}

// selection maps every check name to whether it runs, rejecting unknown names so a typo in
// --skip cannot silently run (or skip) the wrong thing.
func selection(opts Options) (map[string]bool, error) {
	known := map[string]bool{}
	for _, n := range CheckNames() {
		known[n] = len(opts.Only) == 0
	}
	for _, n := range opts.Only {
		if _, ok := known[n]; !ok {
			return nil, fmt.Errorf("lint: unknown check %q in Only (known: %v)", n, CheckNames())
		}
		known[n] = true
	}
	for _, n := range opts.Skip {
		if _, ok := known[n]; !ok {
			return nil, fmt.Errorf("lint: unknown check %q in Skip (known: %v)", n, CheckNames())
		}
		known[n] = false
	}
	return known, nil
}

// dedupe sorts findings (file, line, rule, text) and drops exact repeats: a rule may reach the
// same expression twice, for example through nested calls.
func dedupe(fs []Finding) []Finding {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Text < b.Text
	})
	var out []Finding
	for _, f := range fs {
		if len(out) > 0 && f == out[len(out)-1] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// resolveRoot makes Root absolute and checks it is a directory, so every finding path and every
// tool invocation agree on one tree.
func resolveRoot(root string) (string, error) {
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("lint: root %q: %w", root, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("lint: root: %w", err)
	}
	if !info.IsDir() {
		return "", errors.New("lint: root " + abs + " is not a directory")
	}
	return abs, nil
}
