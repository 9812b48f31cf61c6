package mailbox

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// BenchmarkNodeCatchUp measures materialization through the whole node on the stack: perIter
// direct-message dispatches (two recipients on one shard each, 5-byte body) are put into
// qim.dispatch across 4 shards, then a node is started on those shards and timed until it serves,
// i.e. until every shard caught up with the log (start-up checks included); batch is
// QIM_MAILBOX_MATERIALIZE_BATCH (records per pipeline of one shard worker). Reported:
// dispatches/s and EVALSHA calls per dispatch on the mailbox Redis.
func BenchmarkNodeCatchUp(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) { benchCatchUp(b, batch) })
	}
}

func benchCatchUp(b *testing.B, batch int) {
	const perIter, nShards = 4000, 4
	e := newEnv(b)
	shards := make([]uint32, nShards)
	pairs := make([][2]uint64, nShards)
	for i := range shards {
		shards[i] = e.claimShard()
		pairs[i] = [2]uint64{uint64(e.user(shards[i])), uint64(e.user(shards[i]))}
	}
	ds := make([]*internalv1.GroupDispatch, 0, perIter)
	before := evalshaCalls(b, e.rdb)
	var spent time.Duration
	for i := 0; i < b.N; i++ {
		ds = ds[:0]
		for j := 0; j < perIter; j++ {
			p := pairs[j%nShards]
			_, d := e.message(contract.UserID(p[0]), contract.UserID(p[1]), []byte("hello"))
			ds = append(ds, d...)
		}
		e.produce(ds...)
		start := time.Now()
		cfg := e.config(shards...)
		cfg.MaterializeBatch = batch
		n := e.start(cfg)
		spent += time.Since(start)
		if err := n.stop(); err != nil {
			b.Fatal(err)
		}
	}
	total := float64(b.N * perIter)
	b.ReportMetric(total/spent.Seconds(), "dispatches/s")
	b.ReportMetric(float64(evalshaCalls(b, e.rdb)-before)/total, "evalsha/dispatch")
	b.ReportMetric(0, "ns/op")
}

// evalshaCalls is the server's EVALSHA call counter (luascripttest.ReadEvalsha).
func evalshaCalls(b testing.TB, rdb *redis.Client) int64 {
	e, err := luascripttest.ReadEvalsha(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return e.Calls
}
