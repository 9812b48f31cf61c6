package chaos

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A matrix run with Options.Repeat above 1 runs every selected cell that many times, pass after
// pass (the whole selection, then the whole selection again), on one stack with a fresh
// deployment per cell as always. What it is for: a gate that flips on an unchanged tree teaches
// everyone to rerun instead of read, so how often each cell passes is itself a result. The
// report then carries the per-cell stability (runs passed of runs made, with each run's
// recovery time) and the per-pass verdict of the whole matrix, and stability.md says the same
// for docs/.
//
// Rejected: running one cell N times in a row before the next. It answers the per-cell
// question but never shows the whole matrix passing N times in a row, which is what a release
// run needs, and it lets a cell's leftovers meet only its own twin.

// CellStability is how one cell fared over the passes.
type CellStability struct {
	Name   string `json:"name"`
	Runs   int    `json:"runs"`   // runs that were made (not skipped)
	Passed int    `json:"passed"` // of those, runs that passed
	// RecoveryMs is each run's fault → first SEND_ACK, in pass order (-1: the cell measures none).
	RecoveryMs []float64 `json:"recovery_ms"`
	// Failures names each failed run's pass and its first failed check.
	Failures []string `json:"failures,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`
}

// PassResult is one pass over the whole selection.
type PassResult struct {
	Pass   int      `json:"pass"`
	Passed bool     `json:"passed"`
	Failed []string `json:"failed,omitempty"` // cells that failed in this pass
}

// stability folds the cells of a repeated run into per-cell and per-pass results, cells in the
// order they first ran.
func stability(cells []*CellResult) ([]CellStability, []PassResult) {
	byName := map[string]*CellStability{}
	var order []string
	passes := map[int]*PassResult{}
	for _, c := range cells {
		st := byName[c.Name]
		if st == nil {
			st = &CellStability{Name: c.Name}
			byName[c.Name] = st
			order = append(order, c.Name)
		}
		p := passes[c.Pass]
		if p == nil {
			p = &PassResult{Pass: c.Pass, Passed: true}
			passes[c.Pass] = p
		}
		if c.Skipped != "" {
			st.Skipped = c.Skipped
			continue
		}
		st.Runs++
		st.RecoveryMs = append(st.RecoveryMs, c.RecoveryAckMs)
		if c.Passed {
			st.Passed++
			continue
		}
		p.Passed = false
		p.Failed = append(p.Failed, c.Name)
		st.Failures = append(st.Failures, fmt.Sprintf("pass %d: %s", c.Pass, firstFailed(c)))
	}
	out := make([]CellStability, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	ps := make([]PassResult, 0, len(passes))
	for _, p := range passes {
		ps = append(ps, *p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Pass < ps[j].Pass })
	return out, ps
}

func firstFailed(c *CellResult) string {
	for _, ch := range c.Checks {
		if !ch.Passed {
			return oneLine(ch.Name + ": " + ch.Detail)
		}
	}
	return "no check passed"
}

// oneLine keeps a detail to one line of at most 300 bytes (cut on a rune boundary).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= 300 {
		return s
	}
	cut := 300
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// StabilityRun says where a stability table came from, for the reader who reruns it.
type StabilityRun struct {
	Command string // the command line that made the run
	Commit  string // the tree it ran on
	Machine string // one line: cores, CPU model
}

// writeStability writes stability.md: the per-cell table and the passes, as Markdown for docs/.
func writeStability(dir string, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos matrix stability\n\n")
	fmt.Fprintf(&b, "Made by `%s` on %s, %s; %d passes over the matrix, %.0f min; load %.0f msg/s on %d connections.\n\n",
		rep.Source.Command, rep.Source.Commit, rep.StartedAt.Format("2006-01-02 15:04 UTC"), rep.Options.Repeat, rep.DurationS/60,
		rep.Options.Rate, rep.Options.Connections)
	fmt.Fprintf(&b, "Machine: %s.\n\n", rep.Source.Machine)
	b.WriteString("| cell | passed of runs | recovery ms per run (fault → first SEND_ACK) | failures |\n|---|---|---|---|\n")
	for _, s := range rep.Stability {
		if s.Skipped != "" {
			fmt.Fprintf(&b, "| %s | skipped | – | %s |\n", s.Name, s.Skipped)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d of %d | %s | %s |\n", s.Name, s.Passed, s.Runs, recoveries(s.RecoveryMs),
			strings.ReplaceAll(strings.Join(s.Failures, "; "), "|", "\\|"))
	}
	b.WriteString("\n| pass | whole matrix | failed cells |\n|---|---|---|\n")
	for _, p := range rep.Passes {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", p.Pass, passWord(p.Passed), strings.Join(p.Failed, ", "))
	}
	if err := os.WriteFile(filepath.Join(dir, "stability.md"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	return nil
}

func recoveries(ms []float64) string {
	parts := make([]string, len(ms))
	for i, v := range ms {
		parts[i] = "-"
		if v >= 0 {
			parts[i] = fmt.Sprintf("%.0f", v)
		}
	}
	return strings.Join(parts, ", ")
}

// writeStabilityHTML is the stability table at the top of chaos.html for a repeated run.
func writeStabilityHTML(b *strings.Builder, rep *Report) {
	if len(rep.Stability) == 0 {
		return
	}
	fmt.Fprintf(b, "<h2>Stability over %d passes</h2>", rep.Options.Repeat)
	b.WriteString(`<table><tr><th class="l">cell</th><th>passed of runs</th><th class="l">recovery ms per run</th><th class="l">failures</th></tr>`)
	for _, s := range rep.Stability {
		word, klass := fmt.Sprintf("%d of %d", s.Passed, s.Runs), cls(s.Passed == s.Runs && s.Runs > 0)
		if s.Skipped != "" {
			word, klass = "skipped", "skip"
		}
		fmt.Fprintf(b, `<tr><td class="l">%s</td><td class=%q>%s</td><td class="l">%s</td><td class="l">%s</td></tr>`,
			html.EscapeString(s.Name), klass, word, recoveries(s.RecoveryMs), html.EscapeString(strings.Join(s.Failures, "; ")))
	}
	b.WriteString(`</table><table><tr><th>pass</th><th class="l">whole matrix</th><th class="l">failed cells</th></tr>`)
	for _, p := range rep.Passes {
		fmt.Fprintf(b, `<tr><td>%d</td><td class="l %s">%s</td><td class="l">%s</td></tr>`, p.Pass, cls(p.Passed), passWord(p.Passed),
			html.EscapeString(strings.Join(p.Failed, ", ")))
	}
	b.WriteString("</table>\n")
}
