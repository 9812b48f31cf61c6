package writer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// BenchmarkCommitPath drives the real pipeline (gRPC send stream → Redis with appendfsync always →
// Kafka acks=all → mark) with a window of sends in flight, as one gateway connection would, over
// 500 conversations, and reports throughput, send→answer latency percentiles and EVALSHA calls
// per message.
//
//	go test ./services/writer -run '^$' -bench CommitPath -benchtime 20000x
func BenchmarkCommitPath(b *testing.B) {
	w := startWriter(b, nil)
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(b).RedisCore})
	defer rdb.Close()
	stream, err := w.client.SendStream(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	const window = 256
	window0 := make(chan struct{}, window)
	hist := hdrhistogram.New(1, 10_000_000, 3) // µs
	var sentAt sync.Map
	failures := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < b.N; i++ {
			o, err := stream.Recv()
			if err != nil {
				b.Error(err)
				return
			}
			if o.GetAck() == nil {
				failures++
			}
			if v, ok := sentAt.LoadAndDelete(o.GetCallId()); ok {
				_ = hist.RecordValue(time.Since(v.(time.Time)).Microseconds())
			}
			<-window0
		}
	}()
	a, _ := uniqueUsers(b)
	evalBefore := evalshaCalls(b, rdb)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		window0 <- struct{}{}
		conv := contract.UserID(2 * (i % 500))
		req := sendRequest(sendSpec{sender: a + conv, peer: a + conv + 1, cmid: newCmid(b), body: make([]byte, 200), messageType: 1})
		req.CallId = uint64(i)
		sentAt.Store(uint64(i), time.Now())
		if err := stream.Send(req); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	_ = stream.CloseSend()
	evals := evalshaCalls(b, rdb) - evalBefore
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(hist.ValueAtQuantile(50))/1000, "p50_ms")
	b.ReportMetric(float64(hist.ValueAtQuantile(99))/1000, "p99_ms")
	b.ReportMetric(float64(evals)/float64(b.N), "evalsha/msg")
	if failures > 0 {
		b.Fatalf("%d sends failed", failures)
	}
}

// evalshaCalls is the server's EVALSHA call counter (luascripttest.ReadEvalsha).
func evalshaCalls(b testing.TB, rdb *redis.Client) int64 {
	e, err := luascripttest.ReadEvalsha(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return e.Calls
}
