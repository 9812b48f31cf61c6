package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/services/archiver"
)

// archiveCatchUp bounds the wait for the HistoryArchiver to reach the end of a cell's Outbox
// range: a CQL node restarted by the cell comes back slowly on 2 cores, and the driver then
// reconnects on its own schedule.
const archiveCatchUp = 3 * time.Minute

// judgeArchive, on a deployment with the HistoryArchiver, waits until its committed position
// reached the end of the cell's Outbox range and audits the range against the archive: every
// committed message archived with its own content (archiver.Audit reads the rows back, record
// and index, independently of the archiver). Whatever the cell broke, the archive must be whole.
func (m *matrix) judgeArchive(ctx context.Context, res *CellResult, set *svc.Set, from, to int64) {
	if !slices.Contains(set.Services(), svc.Archiver) {
		return
	}
	if to < 0 {
		res.check("archive audit", false, "no Outbox range: the orphan audit did not find the range's end")
		return
	}
	t := time.Now()
	if err := waitArchived(ctx, set, to); err != nil {
		res.check("archive caught up", false, "%v", err)
		return
	}
	res.check("archive caught up", true, "the archiver's position reached %d %s after the mailbox audit", to, time.Since(t).Round(time.Millisecond))
	ep := m.opts.Stack.Endpoints()
	ar, err := archiver.Audit(ctx, archiver.AuditConfig{KafkaBrokers: ep.KafkaBrokers,
		CQL: archiver.MigrateConfig{Hosts: []string{ep.CQL}}, From: from, To: to})
	if err != nil {
		res.check("archive audit", false, "%v", err)
		return
	}
	var findings []string
	for _, f := range ar.Findings[:min(len(ar.Findings), 5)] {
		findings = append(findings, f.String())
	}
	first := "" // no Go slice in a detail a person reads: "expired 0 []" said nothing
	if len(findings) > 0 {
		first = "; first findings: " + strings.Join(findings, ", ")
	}
	res.check("archive audit", ar.Passed() && ar.Messages > 0 && ar.Archived+ar.Expired == ar.Messages,
		"outbox [%d, %d): %d committed messages; archived %d, missing %d, mismatch %d, reused %d, expired %d%s",
		from, to, ar.Messages, ar.Archived, ar.Missing, ar.Mismatch, ar.Reused, ar.Expired, first)
}

// waitArchived polls the archiver's committed position until it is at least to.
func waitArchived(ctx context.Context, set *svc.Set, to int64) error {
	deadline := time.Now().Add(archiveCatchUp)
	var pos float64
	var err error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		pos, err = set.Metric(ctx, svc.Archiver, "qim_archiver_committed_offset")
		if err == nil && int64(pos) >= to {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("the archiver's position is %.0f (last scrape: %v), not %d, %s after the load", pos, err, to, archiveCatchUp)
}
