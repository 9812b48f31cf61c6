package mailboxstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// BenchmarkMaterialize measures materialize.lua against the stack's mailbox Redis (appendfsync
// everysec): direct-message dispatches with two recipients on one shard (the common 1:1 case when
// both users share a shard; one recipient per dispatch otherwise), a MailboxEntry of ~120 bytes,
// batch = records per pipeline (a shard worker sends every record waiting in its FIFO, up to its
// batch limit, in one pipeline). Reported: dispatches/s, EVALSHA calls per dispatch and the
// microseconds Redis spent per call (INFO commandstats: ADR-0018's measure of a script's cost).
func BenchmarkMaterialize(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			f := newFix(b)
			a, c := f.user(), f.user()
			ms := make([]Materialization, batch)
			offset := int64(0)
			before := readEvalsha(b, f.rdb)
			b.ResetTimer()
			for b.Loop() {
				for j := range ms {
					ms[j] = f.mat(newDispatchID(b), 1, offset, testDay, a, c)
					offset++
				}
				if _, err := f.store.Materialize(context.Background(), ms); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(offset)
			b.ReportMetric(n/b.Elapsed().Seconds(), "dispatches/s")
			spent := readEvalsha(b, f.rdb).Sub(before)
			b.ReportMetric(float64(spent.Calls)/n, "evalsha/dispatch")
			b.ReportMetric(spent.UsecPerCall(), "redis_us/call")
		})
	}
}

func readEvalsha(b testing.TB, rdb *redis.Client) luascripttest.Evalsha {
	e, err := luascripttest.ReadEvalsha(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return e
}
