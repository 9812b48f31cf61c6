package msgstore

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// BenchmarkReserveAndRecordBatch measures the fused commit path against the real core Redis
// (appendfsync always): one pipeline per batch, a 200-byte body, messages spread over 256
// conversations. Reported: msgs/s and EVALSHA calls per message (from INFO commandstats).
func BenchmarkReserveAndRecordBatch(b *testing.B) {
	for _, batch := range []int{64, 1} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			rdb := coreClient(b)
			s, ctx := New(rdb), context.Background()
			fixtures := make([]fixture, 256)
			templates := make([]Intent, len(fixtures))
			for i := range fixtures {
				fixtures[i] = newFixture(b)
				templates[i] = fixtures[i].intent(b, 200)
			}
			intents := make([]Intent, batch)
			next := randU128(b)
			reserveOne(b, ctx, s, templates[0]) // scripts loaded before timing
			before := evalshaCalls(b, rdb)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for j := range intents {
					next.Lo++
					intents[j] = templates[(i*batch+j)%len(templates)]
					intents[j].Key.ClientMessageID = contract.ClientMessageID(next)
				}
				_, errs := s.ReserveAndRecord(ctx, intents)
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			msgs := float64(b.N * batch)
			b.ReportMetric(msgs/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(evalshaCalls(b, rdb)-before)/msgs, "evalsha/msg")
		})
	}
}

// evalshaCalls reads cmdstat_evalsha calls= from INFO commandstats.
func evalshaCalls(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls=")
		if ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}
