package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qim-dev/qim/audit"
)

// auditRows are the failure counts in report order, with the pass they belong to.
var auditRows = []struct {
	kind    audit.Kind
	label   string
	mailbox bool
}{
	{audit.KindCommittedWithoutDispatch, "committed without dispatch", false},
	{audit.KindDispatchWithoutCommit, "dispatch without commit", false},
	{audit.KindMismatch, "mismatch", false},
	{audit.KindWrongPartition, "wrong partition", false},
	{audit.KindNotMaterialized, "not materialized", true},
	{audit.KindNotYet, "not yet materialized", true},
}

// writeAuditSummary prints the verdict, the range, every count, the gaps and the examples of
// each failing kind, and the time taken.
func writeAuditSummary(w io.Writer, res *audit.Result, cfg audit.Config) error {
	var b strings.Builder
	verdict := "PASS"
	if !res.Passed() {
		verdict = "FAIL"
	}
	c, cov := res.Counts, res.Covered
	fmt.Fprintf(&b, "orphan audit: %s\n", verdict)
	fmt.Fprintf(&b, "range: %s [%d, %d); %s: %d partitions, %d records read\n", cfg.OutboxTopic, cov.OutboxFrom,
		cov.OutboxTo, cfg.DispatchTopic, len(cov.Dispatch), c.DispatchRecords)
	fmt.Fprintf(&b, "dispatch pass: %d committed records, %d expected dispatches, %d matched; information: %d replayed copies, "+
		"%d messages committed twice, %d dispatches outside the range\n", c.OutboxRecords, c.ExpectedDispatches, c.Matched,
		c.ReplayedDuplicates, c.OutboxDuplicates, c.OutsideRange)
	failures := res.Failures()
	for _, r := range auditRows[:4] {
		fmt.Fprintf(&b, "  %-28s %d\n", r.label, failures[r.kind])
	}
	if res.Mailbox {
		fmt.Fprintf(&b, "materialization pass: %d entries checked, %d materialized, %d expired or trimmed; %d dispatch "+
			"records converged onto an earlier copy\n", c.EntriesChecked, c.Materialized, c.Expired, c.MailboxDuplicate)
		for _, r := range auditRows[4:] {
			fmt.Fprintf(&b, "  %-28s %d\n", r.label, failures[r.kind])
		}
	} else {
		b.WriteString("materialization pass: skipped (--no-mailbox)\n")
	}
	writeGaps(&b, res.Incomplete)
	writeExamples(&b, res)
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "took %s, %.0f records/s\n", res.Duration.Round(time.Millisecond), res.RecordsPS)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGaps(b *strings.Builder, gaps []audit.Gap) {
	if len(gaps) == 0 {
		b.WriteString("incomplete: no (every offset of the range was read)\n")
		return
	}
	fmt.Fprintf(b, "incomplete: %d gaps\n", len(gaps))
	for _, g := range gaps {
		where := "range"
		if g.Topic != "" {
			where = fmt.Sprintf("%s[%d]", g.Topic, g.Partition)
		}
		if g.From >= 0 || g.To >= 0 {
			where += fmt.Sprintf(" [%d, %d)", g.From, g.To)
		}
		fmt.Fprintf(b, "  %s: %s\n", where, g.Reason)
	}
}

func writeExamples(b *strings.Builder, res *audit.Result) {
	for _, r := range auditRows {
		ex := res.Examples[r.kind]
		if len(ex) == 0 {
			continue
		}
		fmt.Fprintf(b, "examples of %s:\n", r.label)
		for _, e := range ex {
			fmt.Fprintf(b, "  dispatch %s message %s, partition %d offset %d, Outbox offset %d", e.DispatchID, e.MessageID,
				e.Partition, e.Offset, e.OutboxOffset)
			if e.User != 0 {
				fmt.Fprintf(b, ", user %d", e.User)
			}
			fmt.Fprintf(b, ": %s\n", e.Detail)
		}
	}
}
