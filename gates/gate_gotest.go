package gates

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// testGate is gate 2: every unit and integration test of the module, against real servers (the
// integration suites start their own qim-it-* stacks through gates/itest).
type testGate struct{}

func (testGate) Name() string  { return "tests" }
func (testGate) Title() string { return "go test: unit + integration against real servers" }

// testEvent is one line of `go test -json` (test2json).
type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// pkgTally accumulates one package's outcome and the output of its failing tests.
type pkgTally struct {
	passed, failed, skipped int
	result                  string // pass, fail, skip ("" while running)
	elapsed                 float64
	failOut                 []string
	// reasons are the first lines that say why a test failed: a log line with its file:line
	// ("x_test.go:42: ..."), a "--- FAIL" or a panic. Kept apart from failOut, whose last lines a
	// failing integration test fills with its stack's server logs.
	reasons []string
	pending map[string][]string // per running test, its reason lines until it passes or fails
}

// maxReasons bounds pkgTally.reasons.
const maxReasons = 40

// reasonLine matches the output lines that say why a test failed.
var reasonLine = regexp.MustCompile(`^\s*(\S+\.go:\d+: |--- FAIL|panic: )`)

// ModulePackages is the package pattern of the project: the root module and the client-library
// modules it builds from its own subdirectories (ADR-0031).
const ModulePackages = "github.com/qim-dev/qim/..."

func (testGate) Run(ctx context.Context, env *Env, r *Result) {
	// The module pattern, not ./...: it also matches the client-library modules the root module
	// replaces with its subdirectories (contract, wire, proto, sdk; ADR-0031).
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-timeout", "20m", ModulePackages)
	cmd.Dir = env.Root
	cmd.WaitDelay = 10 * time.Second
	shots := webitReportDir(env)
	cmd.Env = append(os.Environ(), "WEBIT_REPORT_DIR="+shots)
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.Fail(fmt.Errorf("gates: go test pipe: %w", err))
		return
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		r.Fail(fmt.Errorf("gates: start go test: %w", err))
		return
	}
	pkgs := tallyEvents(out, env)
	waitErr := cmd.Wait()
	recordTally(r, pkgs)
	if _, err := os.Stat(filepath.Join(shots, "index.html")); err == nil {
		r.Artifacts = append(r.Artifacts, filepath.Join(shots, "index.html"))
	}
	if waitErr != nil {
		r.Check("go test exit status", false, "%v; stderr tail:\n%s", waitErr, tail(stderr.String(), 40))
		return
	}
	r.Check("go test exit status", true, "exit 0")
}

// webitReportDir is where gates/webit's browser scenarios leave their screenshots and their page
// (WEBIT_REPORT_DIR): beside this run's report, which links the page.
func webitReportDir(env *Env) string {
	dir, err := filepath.Abs(filepath.Join(env.ReportDir, "webit"))
	if err != nil {
		return filepath.Join(env.ReportDir, "webit")
	}
	return dir
}

func tallyEvents(out io.Reader, env *Env) map[string]*pkgTally {
	pkgs := map[string]*pkgTally{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Package == "" {
			continue
		}
		p := pkgs[ev.Package]
		if p == nil {
			p = &pkgTally{}
			pkgs[ev.Package] = p
		}
		applyEvent(p, ev, env)
	}
	return pkgs
}

func applyEvent(p *pkgTally, ev testEvent, env *Env) {
	switch {
	case ev.Action == "output" && ev.Test != "":
		if reasonLine.MatchString(ev.Output) && len(p.pending[ev.Test]) < maxReasons {
			if p.pending == nil {
				p.pending = map[string][]string{}
			}
			p.pending[ev.Test] = append(p.pending[ev.Test], ev.Output)
		}
		p.failOut = append(p.failOut, ev.Output) // trimmed to failing tests in recordTally
		if len(p.failOut) > 400 {
			p.failOut = p.failOut[len(p.failOut)-400:]
		}
	case ev.Test != "" && ev.Action == "pass":
		p.passed++
		delete(p.pending, ev.Test)
	case ev.Test != "" && ev.Action == "fail":
		p.failed++
		p.reasons = append(p.reasons, p.pending[ev.Test]...)
		p.reasons = p.reasons[:min(len(p.reasons), maxReasons)]
		delete(p.pending, ev.Test)
	case ev.Test != "" && ev.Action == "skip":
		p.skipped++
	case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
		p.result, p.elapsed = ev.Action, ev.Elapsed
		env.Progressf("%-4s %s (%.1fs, %d passed, %d failed, %d skipped)", ev.Action, ev.Package, ev.Elapsed,
			p.passed, p.failed, p.skipped)
	}
}

func recordTally(r *Result, pkgs map[string]*pkgTally) {
	names := make([]string, 0, len(pkgs))
	var passed, failed, skipped int
	for n, p := range pkgs {
		names = append(names, n)
		passed, failed, skipped = passed+p.passed, failed+p.failed, skipped+p.skipped
	}
	sort.Strings(names)
	for _, n := range names {
		p := pkgs[n]
		switch p.result {
		case "skip":
			continue // no test files
		case "pass":
			r.Check("package "+n, p.failed == 0, "%d passed, %d skipped in %.1fs", p.passed, p.skipped, p.elapsed)
		default:
			r.Check("package "+n, false, "result %q, %d failed; why:\n%s\noutput tail:\n%s", p.result, p.failed,
				strings.TrimRight(strings.Join(p.reasons, ""), "\n"), tail(strings.Join(p.failOut, ""), 60))
		}
	}
	r.Metric("tests_passed", float64(passed))
	r.Metric("tests_failed", float64(failed))
	r.Metric("tests_skipped", float64(skipped))
	r.Check("at least one test ran", passed > 0, "%d tests passed", passed)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
