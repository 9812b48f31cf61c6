package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"runtime"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

var throughputRecords = flag.Int("audit.records", 0,
	"TestAuditThroughput: commit this many messages, dispatch and materialize them, and time the audit (0 skips it)")

// Measures the audit over a large range on this machine (opt-in, it takes minutes):
//
//	go test ./audit -run TestAuditThroughput -audit.records 300000 -timeout 60m -v
//
// The messages are dispatched by a real fanout over contract.MailboxShardsDefault partitions and
// materialized through the store; the audit must pass, and its records/s per pass is logged.
func TestAuditThroughput(t *testing.T) {
	n := *throughputRecords
	if n == 0 {
		t.Skip("opt-in: -audit.records N")
	}
	k := newKit(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	k.ctx = ctx
	var b [6]byte
	_, _ = rand.Read(b[:])
	s := &scene{k: k, outbox: k.topic("outbox", 1), dispatch: k.topic("dispatch", contract.MailboxShardsDefault),
		group: "qim-test-audit-" + hex.EncodeToString(b[:]), shards: contract.MailboxShardsDefault}
	start := time.Now()
	for left := n; left > 0; left -= 2000 {
		envs := make([]*internalv1.CommittedEnvelope, min(left, 2000))
		for i := range envs {
			a := randUint(t)
			envs[i] = k.envelope(a, a+1, time.Now().UnixMilli(), "a message body of ordinary length, 64 bytes......")
		}
		k.commit(s.outbox, envs...)
	}
	t.Logf("committed %d messages in %s", n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	k.fanout(s.outbox, s.dispatch, s.shards, s.group, int64(n))
	t.Logf("fanout dispatched them in %s", time.Since(start).Round(time.Millisecond))
	rdb := mailboxDB(t)
	start = time.Now()
	s.materialize(rdb, nil)
	t.Logf("materialized in %s", time.Since(start).Round(time.Millisecond))

	cfg := s.config()
	cfg.Mailbox = rdb
	var peak uint64 // live heap (after a forced GC) every 100 ms: it must not grow with the range
	cfg.ProgressEvery = 100 * time.Millisecond
	cfg.Progress = func(Progress) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	runtime.GC()
	res := k.audit(cfg, Range{})
	checkCounts(t, res, nil, "")
	if res.Counts.OutboxRecords != int64(n) || res.Counts.Materialized != 2*int64(n) {
		t.Fatalf("counts %+v", res.Counts)
	}
	d, m := res.Passes["dispatch"], res.Passes["mailbox"]
	t.Logf("audit of %d committed records, %d dispatch records, %d entries: %.1f s, %.0f records/s overall; "+
		"dispatch pass %d records in %.1f s (%.0f/s), materialization pass %d records in %.1f s (%.0f/s)",
		res.Counts.OutboxRecords, res.Counts.DispatchRecords, res.Counts.EntriesChecked, res.Seconds, res.RecordsPS,
		d.Records, d.Seconds, d.RecordsPS, m.Records, m.Seconds, m.RecordsPS)
	t.Logf("largest live heap during the audit: %.1f MiB", float64(peak)/(1<<20))
}
