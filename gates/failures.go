package gates

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/qim-dev/qim/services/cmdline"
)

// ErrGatesFailed is what a failed run's error wraps (errors.Is), whatever gates failed.
// It is a cmdline failure: qim-gate exits 1 for it and 2 when a run could not take place.
var ErrGatesFailed = cmdline.Failure(errors.New("qim-gate: one or more gates failed"))

// failureDetailMax bounds one failure line: a CI log's tail is often all a reader gets, and a
// check's detail can run to a few KB (chaos cells list examples).
const failureDetailMax = 400

// Failure is one failed gate and why, in one line: the error that stopped it, else its first
// failed checks.
type Failure struct {
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
}

func (f Failure) String() string { return f.Gate + ": " + f.Reason }

// Failures lists the gates that ran and failed, in release order. Skipped gates are not failures.
func (s Summary) Failures() []Failure {
	var out []Failure
	for _, r := range s.Results {
		if r.Skipped || r.Passed {
			continue
		}
		out = append(out, Failure{Gate: r.Gate, Reason: failureReason(r)})
	}
	return out
}

// failureReason says why a gate failed: its error, its failed checks (the first two, then a
// count), or the absence of evidence (a gate with no checks never passes).
func failureReason(r *Result) string {
	var parts []string
	if r.Error != "" {
		parts = append(parts, r.Error)
	}
	failed := r.FailedChecks()
	for i, c := range failed {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("and %d more failed checks", len(failed)-2))
			break
		}
		parts = append(parts, "check "+c.Name+" failed: "+c.Detail)
	}
	if len(parts) == 0 {
		parts = append(parts, "no check ran (no evidence is a failure)")
	}
	return clip(strings.Join(parts, "; "), failureDetailMax)
}

// clip folds whitespace to single spaces (one line) and cuts at n bytes on a rune boundary.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// GatesFailedError is the run's error when gates failed; it names them so the last line of a
// CI log says which gate to look at.
type GatesFailedError struct {
	Failures []Failure
	Ran      int
}

func (e *GatesFailedError) Error() string {
	names := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		names[i] = f.Gate
	}
	return fmt.Sprintf("qim-gate: %d of %d gates failed: %s", len(e.Failures), e.Ran, strings.Join(names, ", "))
}

func (e *GatesFailedError) Unwrap() error { return ErrGatesFailed }

// Err is the run's error: nil when it passed, else a *GatesFailedError naming the failed gates
// (a run where nothing ran fails too, with no gate to name).
func (s Summary) Err() error {
	if s.Passed {
		return nil
	}
	return &GatesFailedError{Failures: s.Failures(), Ran: len(s.Results) - len(s.Skipped)}
}
