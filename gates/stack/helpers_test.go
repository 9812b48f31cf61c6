package stack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tWriter sends progress lines to the test log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// upStack starts a process stack, registers Down as cleanup and logs time-to-ready and RSS.
func upStack(t *testing.T, timeout time.Duration, opts ...stack.Option) stack.Stack {
	t.Helper()
	st := stack.NewProcess(append([]stack.Option{stack.WithProgress(tWriter{t})}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := st.Down(ctx); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := st.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	logProcesses(t, st)
	return st
}

func logProcesses(t *testing.T, st stack.Stack) {
	t.Helper()
	for _, p := range st.(stack.Introspector).Processes() {
		t.Logf("server %-13s pid %-7d ready in %5.1fs  RSS %5d MiB", p.Server, p.PID, p.ReadyIn.Seconds(), p.RSSKiB/1024)
	}
}

func pidOf(t *testing.T, st stack.Stack, server string) int {
	t.Helper()
	for _, p := range st.(stack.Introspector).Processes() {
		if p.Server == server {
			return p.PID
		}
	}
	t.Fatalf("no process for %s", server)
	return 0
}

func redisRoundTrip(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	key, val := "it:"+t.Name(), fmt.Sprint(time.Now().UnixNano())
	if err := rdb.Set(ctx, key, val, 0).Err(); err != nil {
		t.Fatalf("SET on %s: %v", addr, err)
	}
	got, err := rdb.Get(ctx, key).Result()
	if err != nil || got != val {
		t.Fatalf("GET on %s = %q, %v; want %q", addr, got, err, val)
	}
}

// kafkaRoundTrip produces one record to qim.dispatch partition `part` and consumes it back.
func kafkaRoundTrip(t *testing.T, brokers []string, part int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	val := []byte(fmt.Sprintf("hello %d", time.Now().UnixNano()))
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	res := prod.ProduceSync(ctx, &kgo.Record{Topic: stack.TopicDispatch, Partition: part, Key: []byte("k"), Value: val})
	rec, err := res.First()
	if err != nil {
		t.Fatalf("produce to %s[%d]: %v", stack.TopicDispatch, part, err)
	}
	if rec.Partition != part {
		t.Fatalf("produced to partition %d, want %d", rec.Partition, part)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		stack.TopicDispatch: {part: kgo.NewOffset().At(rec.Offset)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s[%d]: %v", stack.TopicDispatch, part, ctx.Err())
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		for _, r := range fs.Records() {
			if r.Partition == part && string(r.Value) == string(val) {
				return
			}
		}
	}
}

func cqlRoundTrip(t *testing.T, addr string) {
	t.Helper()
	c, err := stack.CQLCluster(addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 20 * time.Second // schema changes take a while on 2 cores
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	defer sess.Close()
	stmts := []string{
		`CREATE KEYSPACE IF NOT EXISTS qim_it WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE IF NOT EXISTS qim_it.kv (k text PRIMARY KEY, v text)`,
		`INSERT INTO qim_it.kv (k, v) VALUES ('hello', 'world')`,
	}
	for _, q := range stmts {
		if err := sess.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var v string
	if err := sess.Query(`SELECT v FROM qim_it.kv WHERE k = 'hello'`).Scan(&v); err != nil || v != "world" {
		t.Fatalf("SELECT = %q, %v; want world", v, err)
	}
}
