package audit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/fanout"
)

// Named as in services/internal/failpoint (which this package may not import).
const fanoutBeforeOffsetCommit = "fanout-before-offset-commit"

// load commits 1:1 messages to the stack's Outbox in batches until stop, as writers would.
type load struct {
	k    *kit
	stop chan struct{}
	wg   sync.WaitGroup
	sent int64
}

func startLoad(k *kit) *load {
	l := &load{k: k, stop: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			envs := make([]*internalv1.CommittedEnvelope, 40)
			for i := range envs {
				a := randUint(k.t)
				envs[i] = k.envelope(a, a+1, time.Now().UnixMilli(), "under load")
			}
			if _, err := produceAll(k, envs); err != nil {
				k.t.Errorf("load: %v", err)
				return
			}
			l.sent += int64(len(envs))
		}
	}()
	return l
}

func (l *load) end() int64 {
	close(l.stop)
	l.wg.Wait()
	return l.sent
}

// produceAll commits envs to the stack's Outbox (the load runs on its own goroutine, so errors
// are returned rather than failing the test from there).
func produceAll(k *kit, envs []*internalv1.CommittedEnvelope) (int, error) {
	recs := k.commitRecords(contract.TopicOutbox, envs...)
	return len(recs), k.cl.ProduceSync(k.ctx, recs...).FirstErr()
}

// A FanoutCoordinator process is SIGKILLed under load at failpoint fanout-before-offset-commit:
// every dispatch of a batch is acknowledged, its Outbox position is not stored. The restarted
// fanout replays from the stored position and a real MailboxNode converges the copies. The
// audit over everything then reports no failure of any kind, and sees the replay (duplicate
// dispatches, and dispatch records converged in the mailbox) — with the default window and with
// windows small enough that the replays reach windows already closed.
func TestAuditAfterFanoutKilledBeforeOffsetCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds qim with failpoints and runs service processes")
	}
	k := newKit(t)
	ep := itest.Endpoints(t)
	bin, err := svc.Build(k.ctx, "..", t.TempDir(), "failpoints")
	if err != nil {
		t.Fatal(err)
	}
	set, err := svc.New(bin, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.StopAll() })
	if err := set.Start(k.ctx, svc.Mailbox); err != nil {
		t.Fatal(err)
	}
	if err := set.Start(k.ctx, svc.Fanout, "QIM_FAILPOINT="+fanoutBeforeOffsetCommit, "QIM_FAILPOINT_SKIP=5"); err != nil {
		t.Fatal(err)
	}
	l := startLoad(k)
	eventually(t, 2*time.Minute, "the fanout to hit its failpoint", func() bool { return !set.Running(svc.Fanout) })
	if log := set.LogTail(svc.Fanout, 20); !strings.Contains(log, "failpoint: "+fanoutBeforeOffsetCommit+" hit") {
		l.end()
		t.Fatalf("the fanout exited without hitting its failpoint:\n%s", log)
	}
	if err := set.Start(k.ctx, svc.Fanout); err != nil {
		l.end()
		t.Fatal(err)
	}
	killedAt := outboxEnd(t, k)
	eventually(t, 2*time.Minute, "more load after the restart", func() bool { return outboxEnd(t, k) >= killedAt+2000 })
	sent := l.end()

	shards, _ := contract.NewShardCount(ep.DispatchShards)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisMailbox})
	t.Cleanup(func() { _ = rdb.Close() })
	cfg := Config{Brokers: k.brokers, Shards: shards, Mailbox: rdb}
	ends, err := WaitCaughtUp(k.ctx, cfg, fanout.DefaultConfig().Group, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int{0, 16} {
		cfg.Window = window
		res, err := Run(k.ctx, cfg, Range{Ends: ends})
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, res, nil, "")
		c := res.Counts
		if c.OutboxRecords != sent || c.ReplayedDuplicates == 0 || c.MailboxDuplicate == 0 || c.Materialized != c.EntriesChecked {
			t.Fatalf("window %d: counts %+v: want %d Outbox records, replays seen, every entry materialized", window, c, sent)
		}
		t.Logf("window %d: %d committed, %d dispatches (%d replayed), %d entries materialized, %.0f records/s",
			window, c.OutboxRecords, c.DispatchRecords, c.ReplayedDuplicates, c.Materialized, res.RecordsPS)
	}
}

func outboxEnd(t *testing.T, k *kit) int64 {
	t.Helper()
	ends, err := listed(k.adm.ListEndOffsets(k.ctx, contract.TopicOutbox))
	if err != nil {
		t.Fatal(err)
	}
	return ends[0]
}

// eventually polls cond until it holds; within bounds a condition that is expected to come true.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s", within, what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
