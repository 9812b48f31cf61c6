package itest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { os.Exit(Main(m, stack.WithDispatchShards(8))) }

func TestEndpointsGiveAWorkingStack(t *testing.T) {
	ep := Endpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisCore})
	defer rdb.Close()
	if err := rdb.Set(ctx, "itest", "ok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ep.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, stack.TopicDispatch)
	if err != nil || len(td[stack.TopicDispatch].Partitions) != 8 {
		t.Fatalf("qim.dispatch = %+v, %v; want 8 partitions", td[stack.TopicDispatch], err)
	}
	// What QIM_IT_ENDPOINTS does in another process: attach to this stack and verify it.
	att, err := stack.Attach(ep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := att.Up(ctx); err != nil {
		t.Fatalf("attached Up (verify): %v", err)
	}
	if err := att.Check(ctx); err != nil {
		t.Fatalf("attached Check: %v", err)
	}
	if tail, err := att.Logs(stack.ServerKafka, 3); err != nil || tail == "" {
		t.Fatalf("attached Logs = %q, %v", tail, err)
	}
}

// fakeTB records what the helper does to a test; Fatal/Skip end the goroutine like testing does.
type fakeTB struct {
	testing.TB
	failed  bool
	skipped bool
	out     []string
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Failed() bool              { return f.failed }
func (f *fakeTB) Cleanup(func())            {}
func (f *fakeTB) Logf(s string, a ...any)   { f.out = append(f.out, fmt.Sprintf(s, a...)) }
func (f *fakeTB) Errorf(s string, a ...any) { f.failed = true; f.Logf(s, a...) }
func (f *fakeTB) Fatalf(s string, a ...any) { f.Errorf(s, a...); runtime.Goexit() }
func (f *fakeTB) Fatal(a ...any)            { f.Fatalf("%s", fmt.Sprint(a...)) }
func (f *fakeTB) Skip(a ...any)             { f.skipped = true; f.Logf("%s", fmt.Sprint(a...)); runtime.Goexit() }

func run(f *fakeTB, fn func(testing.TB)) {
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
}

// deadStack is a Stack whose kafka is dead.
type deadStack struct{ stack.Stack }

func (deadStack) Check(context.Context) error {
	return &stack.ServerDiedError{Server: stack.ServerKafka, Detail: "pid 1 signal: killed", LogTail: "last kafka words"}
}
func (deadStack) Endpoints() stack.Endpoints { return stack.Endpoints{} }
func (deadStack) Logs(s string, n int) (string, error) {
	return fmt.Sprintf("%d lines of %s", n, s), nil
}

func TestDeadServerFailsTheTestWithLogs(t *testing.T) {
	f := &fakeTB{}
	run(f, func(tb testing.TB) { afterTest(tb, deadStack{}) })
	all := strings.Join(f.out, "\n")
	if !f.failed || !strings.Contains(all, "server kafka died") || !strings.Contains(all, "last kafka words") {
		t.Fatalf("failed=%v out:\n%s", f.failed, all)
	}
	for _, s := range []string{stack.ServerRedisCore, stack.ServerRedisMailbox, stack.ServerKafka} {
		if !strings.Contains(all, "50 lines of "+s) {
			t.Errorf("no log tail of %s attached:\n%s", s, all)
		}
	}
}

func TestUnavailableStackSkipsOnlyWhenAskedTo(t *testing.T) {
	mu.Lock()
	saved := [4]any{current, owned, skipReason, failErr}
	mu.Unlock()
	defer setState(saved[0].(stack.Stack), saved[1].(bool), saved[2].(string), nil)

	setState(nil, true, "", fmt.Errorf("redis-server not found: run `make setup`"))
	f := &fakeTB{}
	run(f, func(tb testing.TB) { Endpoints(tb) })
	if !f.failed || f.skipped || !strings.Contains(strings.Join(f.out, ""), "make setup") {
		t.Fatalf("without QIM_IT_SKIP: failed=%v skipped=%v out=%q", f.failed, f.skipped, f.out)
	}
	setState(nil, true, "integration stack unavailable and QIM_IT_SKIP=1: boom", nil)
	f = &fakeTB{}
	run(f, func(tb testing.TB) { Endpoints(tb) })
	if f.failed || !f.skipped {
		t.Fatalf("with QIM_IT_SKIP=1: failed=%v skipped=%v out=%q", f.failed, f.skipped, f.out)
	}
}
