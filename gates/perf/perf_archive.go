package perf

import (
	"context"
	"slices"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/services/archiver"
)

// Archive evidence of a perf run on a deployment with the HistoryArchiver (--with-cql).
const (
	archiveLagMetric  = "qim_archiver_lag_seconds"
	archiveRowsMetric = "qim_archiver_lag_records"
	archiveSampleTick = time.Second
	archiveCatchUp    = 2 * time.Minute // longest wait for the archiver to reach the Outbox end
)

// archiveProbe samples the archiver's lag during the measured run and, after it, waits for the
// archiver to catch up and audits the archive against the whole Outbox (archiver.Audit): the
// rows in CQL must be the committed messages, none missing, none overwritten.
type archiveProbe struct {
	addr    string
	samples []float64
	stop    chan struct{}
	done    chan struct{}
}

// startArchiveProbe returns nil when the deployment runs no archiver.
func startArchiveProbe(ctx context.Context, env *gates.Env) *archiveProbe {
	set, err := env.Deployment(ctx)
	if err != nil || !set.Running(svc.Archiver) {
		return nil
	}
	p := &archiveProbe{addr: set.Addrs.Metrics[svc.Archiver], stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(archiveSampleTick)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if v, ok := archiverGauge(ctx, p.addr, archiveLagMetric); ok {
					p.samples = append(p.samples, v)
				}
			}
		}
	}()
	return p
}

// archiverGauge reads one of the archiver's unlabelled gauges; false when the scrape fails or
// does not hold it.
func archiverGauge(ctx context.Context, addr, name string) (float64, bool) {
	fams, err := svc.ScrapeMetrics(ctx, addr)
	if err != nil {
		return 0, false
	}
	v, err := svc.FamilySum(fams, name)
	return v, err == nil
}

// halt stops the sampling without judging (the run failed).
func (p *archiveProbe) halt() {
	if p != nil {
		close(p.stop)
		<-p.done
	}
}

// finish stops the sampling, reports the lag, waits for the archiver to catch up and audits.
func (p *archiveProbe) finish(ctx context.Context, env *gates.Env, r *gates.Result) {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	s := slices.Clone(p.samples)
	slices.Sort(s)
	if r.Check("archive lag sampled", len(s) > 0, "%d samples of %s during the run", len(s), archiveLagMetric) {
		p99 := s[min(len(s)-1, len(s)*99/100)]
		r.Metric("archive_lag_p50_s", s[len(s)/2])
		r.Metric("archive_lag_p99_s", p99)
		r.Metric("archive_lag_max_s", s[len(s)-1])
		r.Check("archive keeps up", p99 <= contract.SLOArchiveLagP99.Seconds(), "archive lag p50/p99/max %.2f/%.2f/%.2f s (p99 limit %s)",
			s[len(s)/2], p99, s[len(s)-1], contract.SLOArchiveLagP99)
	}
	deadline := time.Now().Add(archiveCatchUp)
	for {
		v, ok := archiverGauge(ctx, p.addr, archiveRowsMetric)
		if ok && v == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.Check("archive caught up", false, "%s = %v (ok %v) %s after the load", archiveRowsMetric, v, ok, archiveCatchUp)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	p.audit(ctx, env, r)
}

func (p *archiveProbe) audit(ctx context.Context, env *gates.Env, r *gates.Result) {
	st, err := env.Stack(ctx)
	if err != nil {
		r.Check("archive audit", false, "no stack: %v", err)
		return
	}
	ep := st.Endpoints()
	t := time.Now()
	res, err := archiver.Audit(ctx, archiver.AuditConfig{KafkaBrokers: ep.KafkaBrokers,
		CQL: archiver.MigrateConfig{Hosts: []string{ep.CQL}}, From: -1, To: -1})
	if err != nil {
		r.Check("archive audit", false, "%v", err)
		return
	}
	for k, v := range map[string]int{"archive_messages": res.Messages, "archive_archived": res.Archived, "archive_missing": res.Missing,
		"archive_mismatch": res.Mismatch, "archive_reused": res.Reused, "archive_expired": res.Expired} {
		r.Metric(k, float64(v))
	}
	r.Check("archive audit", res.Passed() && res.Archived+res.Expired == res.Messages,
		"Outbox [%d, %d): %d committed messages in %d conversations; archived %d, missing %d, mismatch %d, reused %d, expired %d (%s)",
		res.From, res.To, res.Messages, res.Conversations, res.Archived, res.Missing, res.Mismatch, res.Reused, res.Expired,
		time.Since(t).Round(time.Millisecond))
}
