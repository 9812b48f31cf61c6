package main

import (
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/audit"
	"github.com/qim-dev/qim/contract"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestAuditOptionsResolve(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	service := map[string]string{"QIM_KAFKA_BROKERS": "k1:9092,k2:9092", "QIM_MAILBOX_REDIS_ADDR": "r:6379",
		"QIM_MAILBOX_SHARD_COUNT": "8"}
	cases := []struct {
		name  string
		opts  auditDispatchOptions
		env   map[string]string
		check func(t *testing.T, p auditPlan)
		err   string
	}{
		{name: "the services' variables", env: service, check: func(t *testing.T, p auditPlan) {
			if len(p.cfg.Brokers) != 2 || p.cfg.Shards != 8 || p.cfg.Mailbox == nil || p.cfg.Mailbox.Options().Addr != "r:6379" {
				t.Fatalf("plan %+v", p.cfg)
			}
		}},
		{name: "flags win over variables", env: service,
			opts: auditDispatchOptions{brokers: "f:1", mailboxRedis: "m:2", shards: 16},
			check: func(t *testing.T, p auditPlan) {
				if p.cfg.Brokers[0] != "f:1" || p.cfg.Shards != 16 || p.cfg.Mailbox.Options().Addr != "m:2" {
					t.Fatalf("plan %+v", p.cfg)
				}
			}},
		{name: "the services' default shard count", env: map[string]string{"QIM_KAFKA_BROKERS": "k:1"},
			opts: auditDispatchOptions{noMailbox: true},
			check: func(t *testing.T, p auditPlan) {
				if p.cfg.Shards != contract.MailboxShardsDefault || p.cfg.Mailbox != nil {
					t.Fatalf("plan %+v", p.cfg)
				}
			}},
		{name: "since as a duration, until as a time", env: service,
			opts: auditDispatchOptions{since: "24h", until: "2026-12-01T11:00:00Z"},
			check: func(t *testing.T, p auditPlan) {
				if !p.rng.Since.Equal(now.Add(-24*time.Hour)) || !p.rng.Until.Equal(now.Add(-time.Hour)) {
					t.Fatalf("range %+v", p.rng)
				}
			}},
		{name: "no brokers", err: "QIM_KAFKA_BROKERS"},
		{name: "no mailbox Redis", env: map[string]string{"QIM_KAFKA_BROKERS": "k:1"}, err: "--no-mailbox"},
		{name: "a shard count that is not a power of two", env: service, opts: auditDispatchOptions{shards: 12}, err: "power of two"},
		{name: "a malformed shard variable", env: map[string]string{"QIM_KAFKA_BROKERS": "k:1", "QIM_MAILBOX_SHARD_COUNT": "x"},
			err: "QIM_MAILBOX_SHARD_COUNT"},
		{name: "offsets and times together", env: service, opts: auditDispatchOptions{from: 5, since: "1h"}, err: "not both"},
		{name: "a bad time", env: service, opts: auditDispatchOptions{until: "yesterday"}, err: "--until"},
		{name: "a negative wait", env: service, opts: auditDispatchOptions{wait: -time.Second}, err: "--wait"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.opts.resolve(env(c.env), now)
			if p.cfg.Mailbox != nil {
				defer p.cfg.Mailbox.Close()
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, p)
		})
	}
}

// The summary names the verdict, every count, each gap and each failing example, and the time.
func TestAuditSummary(t *testing.T) {
	res := &audit.Result{
		Covered: audit.Covered{OutboxFrom: 0, OutboxTo: 10, Dispatch: []audit.PartitionRange{{Partition: 0, To: 19}}},
		Counts:  audit.Counts{OutboxRecords: 10, ExpectedDispatches: 19, DispatchRecords: 20, Matched: 19, Mismatch: 1, ReplayedDuplicates: 2},
		Examples: map[audit.Kind][]audit.Example{audit.KindMismatch: {{DispatchID: "ab", MessageID: "cd", Partition: 3, Offset: 17,
			OutboxOffset: 4, Detail: "sender_user_id differs from the record committed at Outbox offset 4"}}},
		Incomplete: []audit.Gap{{Topic: "qim.dispatch", Partition: 5, From: 0, To: 12, Reason: "deleted by retention"}},
		Duration:   1500 * time.Millisecond, RecordsPS: 20,
	}
	var b strings.Builder
	if err := writeAuditSummary(&b, res, audit.Config{OutboxTopic: "qim.outbox", DispatchTopic: "qim.dispatch"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orphan audit: FAIL", "qim.outbox [0, 10)", "2 replayed copies", "mismatch                     1",
		"committed without dispatch   0", "incomplete: 1 gaps", "qim.dispatch[5] [0, 12): deleted by retention",
		"partition 3 offset 17, Outbox offset 4: sender_user_id differs", "materialization pass: skipped", "took 1.5s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
