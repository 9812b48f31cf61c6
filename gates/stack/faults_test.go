package stack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/gates/stack"
)

// One stack for every fault: the subtests run in order and each leaves every server running,
// except the last, which takes the stack down with two servers paused.
func TestFaults(t *testing.T) {
	st := upStack(t, 2*time.Minute, stack.WithDispatchShards(4))
	f, ok := st.(stack.Faults)
	if !ok {
		t.Fatalf("%T does not implement stack.Faults", st)
	}
	ep := st.Endpoints()
	t.Run("RedisKillRestartReplaysAOF", func(t *testing.T) { testRedisKillRestart(t, st, f, ep.RedisCore) })
	t.Run("KafkaKillRestartKeepsRecords", func(t *testing.T) { testKafkaKillRestart(t, st, f, ep.KafkaBrokers) })
	t.Run("PauseIsUnreachable", func(t *testing.T) { testPauseResume(t, f, ep.RedisMailbox) })
	t.Run("DownAfterPause", func(t *testing.T) { testDownAfterPause(t, st, f) })
}

func testRedisKillRestart(t *testing.T, st stack.Stack, f stack.Faults, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	val := fmt.Sprint(time.Now().UnixNano())
	if err := rdb.Set(ctx, "it:faults", val, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Restart(ctx, stack.ServerRedisCore); err == nil {
		t.Fatal("Restart of a running redis-core succeeded")
	}
	oldPid := pidOf(t, st, stack.ServerRedisCore)
	if err := f.Kill(stack.ServerRedisCore); err != nil {
		t.Fatal(err)
	}
	expectDied(t, st, stack.ServerRedisCore)
	t0 := time.Now()
	if err := f.Restart(ctx, stack.ServerRedisCore); err != nil {
		t.Fatal(err)
	}
	t.Logf("redis-core back in %v", time.Since(t0).Round(time.Millisecond))
	pid := pidOf(t, st, stack.ServerRedisCore)
	if pid == oldPid {
		t.Fatalf("Processes still lists the killed pid %d", pid)
	}
	// DownProject and GC find the restarted server by its pid file.
	b, err := os.ReadFile(filepath.Join(st.Endpoints().Dir, "pids", stack.ServerRedisCore+".pid"))
	if err != nil || !strings.HasPrefix(string(b), fmt.Sprintf("%d ", pid)) {
		t.Fatalf("pid file = %q, %v; want the new pid %d", b, err, pid)
	}
	got, err := rdb.Get(ctx, "it:faults").Result() // the old client reconnects on its own
	if err != nil || got != val {
		t.Fatalf("GET after restart = %q, %v; want %q (AOF replay)", got, err, val)
	}
	if err := st.Check(ctx); err != nil {
		t.Fatalf("Check after Restart: %v", err)
	}
}

func testKafkaKillRestart(t *testing.T, st stack.Stack, f stack.Faults, brokers []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	val := []byte(fmt.Sprintf("before kill %d", time.Now().UnixNano()))
	rec, err := prod.ProduceSync(ctx, &kgo.Record{Topic: stack.TopicOutbox, Value: val}).First()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Kill(stack.ServerKafka); err != nil {
		t.Fatal(err)
	}
	expectDied(t, st, stack.ServerKafka)
	t0 := time.Now()
	if err := f.Restart(ctx, stack.ServerKafka); err != nil {
		t.Fatal(err)
	}
	t.Logf("kafka back in %v", time.Since(t0).Round(time.Millisecond))
	if got := consumeAt(t, ctx, brokers, rec.Partition, rec.Offset); string(got) != string(val) {
		t.Fatalf("record at %s[%d]@%d = %q after restart, want %q", stack.TopicOutbox, rec.Partition, rec.Offset, got, val)
	}
	// The producer from before the kill carries on: it reconnects to the same address.
	t1 := time.Now()
	next, err := prod.ProduceSync(ctx, &kgo.Record{Topic: stack.TopicOutbox, Value: []byte("after restart")}).First()
	if err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	t.Logf("first produce after restart took %v (offset %d, before the kill %d)", time.Since(t1).Round(time.Millisecond), next.Offset, rec.Offset)
	if next.Offset <= rec.Offset {
		t.Fatalf("offset after restart %d <= %d: the log was reset", next.Offset, rec.Offset)
	}
	if err := st.Check(ctx); err != nil {
		t.Fatalf("Check after Restart: %v", err)
	}
}

func consumeAt(t *testing.T, ctx context.Context, brokers []string, part int32, off int64) []byte {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		stack.TopicOutbox: {part: kgo.NewOffset().At(off)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s[%d]@%d: %v", stack.TopicOutbox, part, off, ctx.Err())
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		for _, r := range fs.Records() {
			if r.Offset == off {
				return r.Value
			}
		}
	}
}

func testPauseResume(t *testing.T, f stack.Faults, addr string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	defer rdb.Close()
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		return rdb.Ping(ctx).Err()
	}
	if err := ping(); err != nil {
		t.Fatal(err)
	}
	if err := f.Resume(stack.ServerRedisMailbox); err == nil {
		t.Fatal("Resume of a running server succeeded")
	}
	if err := f.Pause(stack.ServerRedisMailbox); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err := ping()
	if err == nil {
		t.Fatal("PING answered while paused")
	}
	t.Logf("PING while paused failed after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	if err := f.Restart(context.Background(), stack.ServerRedisMailbox); err == nil {
		t.Fatal("Restart of a paused server succeeded")
	}
	if err := f.Resume(stack.ServerRedisMailbox); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func testDownAfterPause(t *testing.T, st stack.Stack, f stack.Faults) {
	procs := st.(stack.Introspector).Processes()
	for _, s := range []string{stack.ServerRedisCore, stack.ServerKafka} {
		if err := f.Pause(s); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	if err := st.Down(context.Background()); err != nil {
		t.Fatalf("Down: %v", err)
	}
	// The default grace is 10s: a Down that waited for it would have SIGKILLed the paused ones.
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Down with paused servers took %v", d)
	} else {
		t.Logf("Down with paused servers took %v", d.Round(time.Millisecond))
	}
	for _, p := range procs {
		if alive(p.PID) {
			t.Errorf("%s pid %d alive after Down", p.Server, p.PID)
		}
	}
	if err := f.Kill(stack.ServerKafka); !errors.Is(err, stack.ErrNotRunning) {
		t.Errorf("Kill after Down = %v, want ErrNotRunning", err)
	}
}

// expectDied asserts that Check names server as dead (Kill returns after the reap, so at once).
func expectDied(t *testing.T, st stack.Stack, server string) {
	t.Helper()
	var died *stack.ServerDiedError
	if err := st.Check(context.Background()); !errors.As(err, &died) || died.Server != server {
		t.Fatalf("Check after Kill(%s) = %v, want *ServerDiedError for it", server, err)
	}
}
