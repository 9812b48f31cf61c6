package msgstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// BenchmarkReserveAndRecordBatch measures the fused commit path against the real core Redis
// (appendfsync always): one pipeline per batch, a 200-byte body, messages spread over 256
// conversations. Reported: msgs/s, EVALSHA calls per message and the microseconds Redis spent per
// call (INFO commandstats: the script's cost inside Redis, ADR-0018's measure).
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
			before := readEvalsha(b, rdb)
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
			spent := readEvalsha(b, rdb).Sub(before)
			b.ReportMetric(float64(spent.Calls)/msgs, "evalsha/msg")
			b.ReportMetric(spent.UsecPerCall(), "redis_us/call")
		})
	}
}

func readEvalsha(b *testing.B, rdb *redis.Client) luascripttest.Evalsha {
	e, err := luascripttest.ReadEvalsha(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return e
}
