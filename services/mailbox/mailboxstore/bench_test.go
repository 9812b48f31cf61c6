package mailboxstore

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkMaterialize measures materialize.lua against the stack's mailbox Redis (appendfsync
// everysec): direct-message dispatches with two recipients on one shard (the common 1:1 case when
// both users share a shard; one recipient per dispatch otherwise), a MailboxEntry of ~120 bytes,
// batch = records per pipeline (a shard worker sends every record waiting in its FIFO, up to its
// batch limit, in one pipeline). Reported: dispatches/s and EVALSHA calls per dispatch (INFO
// commandstats).
func BenchmarkMaterialize(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			f := newFix(b)
			a, c := f.user(), f.user()
			ms := make([]Materialization, batch)
			offset := int64(0)
			before := evalshaCalls(b, f.rdb)
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
			b.ReportMetric(float64(evalshaCalls(b, f.rdb)-before)/n, "evalsha/dispatch")
		})
	}
}

func evalshaCalls(b testing.TB, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}
