package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the per-check table, then every finding as file:line: [rule] text (the form
// editors and CI annotate), then a one-line verdict.
func WriteText(w io.Writer, rep Report) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	// tabwriter buffers until Flush, whose error is checked; the row writes cannot fail.
	_, _ = fmt.Fprintln(tw, "CHECK\tRESULT\tFINDINGS\tTIME\tWHY")
	for _, c := range rep.Checks {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%dms\t%s\n", c.Name, result(c), len(c.Findings), c.DurationMS, c.Reason)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	for _, c := range rep.Checks {
		for _, f := range c.Findings {
			buf.WriteString(formatFinding(f) + "\n")
		}
	}
	buf.WriteString(verdict(rep) + "\n")
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("lint: write report: %w", err)
	}
	return nil
}

// WriteJSON prints the report as indented JSON.
func WriteJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	return nil
}

func result(c Check) string {
	switch {
	case c.Skipped:
		return "SKIP"
	case c.Passed:
		return "PASS"
	}
	return "FAIL"
}

func formatFinding(f Finding) string {
	switch {
	case f.File == "":
		return fmt.Sprintf("[%s] %s", f.Rule, f.Text)
	case f.Line == 0:
		return fmt.Sprintf("%s: [%s] %s", f.File, f.Rule, f.Text)
	}
	return fmt.Sprintf("%s:%d: [%s] %s", f.File, f.Line, f.Rule, f.Text)
}

func verdict(rep Report) string {
	failed, skipped := 0, 0
	for _, c := range rep.Checks {
		switch {
		case c.Skipped:
			skipped++
		case !c.Passed:
			failed++
		}
	}
	if rep.Passed {
		return fmt.Sprintf("lint: PASS (%d checks, %d skipped)", len(rep.Checks)-skipped, skipped)
	}
	return fmt.Sprintf("lint: FAIL (%d findings in %d of %d checks, %d skipped)",
		rep.FindingCount(), failed, len(rep.Checks)-skipped, skipped)
}
