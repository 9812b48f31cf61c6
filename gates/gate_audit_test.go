package gates

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/audit"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/stack/stacktest"
	"github.com/qim-dev/qim/gates/svc"
)

// Gate 9 passes only a complete audit with evidence and every failure count zero; each failure
// kind, a consumer that did not catch up, an empty run and a gap fail it, naming what failed.
func TestAuditGateVerdicts(t *testing.T) {
	clean := func() *audit.Result {
		return &audit.Result{Counts: audit.Counts{OutboxRecords: 10, DispatchRecords: 20, Matched: 20},
			Covered: audit.Covered{OutboxTo: 10}, Mailbox: true, RecordsPS: 1000}
	}
	cases := []struct {
		name    string
		waitErr error
		res     func() *audit.Result
		failing string // the one failing check ("" = the gate passes)
		detail  string
	}{
		{name: "clean", res: clean},
		{name: "a mismatch", res: func() *audit.Result {
			r := clean()
			r.Counts.Mismatch = 1
			r.Examples = map[audit.Kind][]audit.Example{audit.KindMismatch: {{DispatchID: "ab", Detail: "sender_user_id differs"}}}
			return r
		}, failing: "mismatch", detail: "sender_user_id differs"},
		{name: "a lost entry", res: func() *audit.Result { r := clean(); r.Counts.NotMaterialized = 2; return r },
			failing: "not-materialized", detail: "2"},
		{name: "not caught up", waitErr: &audit.NotCaughtUpError{Who: "mailbox shard 3", At: 5, Want: 9, Waited: time.Minute},
			failing: "caught-up", detail: "mailbox shard 3"},
		{name: "nothing committed", res: func() *audit.Result { r := clean(); r.Counts.OutboxRecords = 0; return r },
			failing: "evidence"},
		{name: "a gap", res: func() *audit.Result {
			r := clean()
			r.Incomplete = []audit.Gap{{Topic: "qim.dispatch", Partition: 2, Reason: "deleted by retention"}}
			return r
		}, failing: "complete", detail: "deleted by retention"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran := false
			g := auditGate{
				wait: func(context.Context, audit.Config, string, time.Duration) (*audit.Ends, error) {
					return &audit.Ends{}, c.waitErr
				},
				run: func(_ context.Context, cfg audit.Config, rng audit.Range) (*audit.Result, error) {
					ran = true
					if cfg.Mailbox == nil || cfg.Shards != 8 || rng.Ends == nil {
						t.Errorf("audit run with %+v over %+v: want the mailbox, 8 shards and the waited ends", cfg, rng)
					}
					return c.res(), nil
				},
			}
			r := RunOne(context.Background(), g, auditEnv(t), time.Hour)
			if c.waitErr != nil && ran {
				t.Fatal("audited although the consumers had not caught up")
			}
			var failed []Check
			for _, ch := range r.Checks {
				if !ch.Passed {
					failed = append(failed, ch)
				}
			}
			if c.failing == "" {
				if !r.Passed || r.Metrics["outbox_records"] != 10 || r.Metrics["records_per_s"] != 1000 {
					t.Fatalf("clean audit: passed=%v failed=%v metrics=%v", r.Passed, failed, r.Metrics)
				}
				return
			}
			if r.Passed || len(failed) != 1 || failed[0].Name != c.failing || !strings.Contains(failed[0].Detail, c.detail) {
				t.Fatalf("failed checks %+v, want only %q saying %q", failed, c.failing, c.detail)
			}
		})
	}
}

func auditEnv(t *testing.T) *Env {
	ep := stack.Endpoints{Dir: t.TempDir(), DispatchShards: 8, KafkaBrokers: []string{"127.0.0.1:1"}, RedisMailbox: "127.0.0.1:1"}
	set, err := svc.New("/nonexistent/qim", ep)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Progress: &bytes.Buffer{},
		Stack:      func(context.Context) (stack.Stack, error) { return stacktest.Fake{EP: ep}, nil },
		Deployment: func(context.Context) (*svc.Set, error) { return set, nil }}
}
