// Package itest gives integration tests one real server stack per test package.
//
//	func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }          // or itest.Main(m, stack.WithCQL(true))
//
//	func TestSomething(t *testing.T) {
//		ep := itest.Endpoints(t) // skips in -short mode; fails if the stack could not start
//		...
//	}
//
// Main starts a process stack (gates/stack) before the tests and stops it after them, also
// when a test fails. If a test panics or the binary is killed, the kernel kills the servers
// (they are started with a parent-death signal) and the next Main removes the leftover
// directory (stack.GC).
//
// Environment:
//
//	QIM_IT_ENDPOINTS=<endpoints.json or project dir>  reuse a running stack (e.g. from
//	                  `qim-gate stack up`) instead of starting one; it is verified, never stopped.
//	QIM_IT_SKIP=1     a stack that cannot start makes the tests SKIP instead of FAIL. Without it,
//	                  a missing server is a failure: missing evidence never passes.
//
// There is no build tag: integration tests run under plain `go test` and are skipped only by
// -short or QIM_IT_SKIP=1.
package itest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

// Timeouts of Main.
var (
	UpTimeout   = 5 * time.Minute
	DownTimeout = 30 * time.Second
)

var (
	mu         sync.Mutex
	current    stack.Stack
	owned      bool   // Main started current and must stop it
	skipReason string // set: tests skip with this reason
	failErr    error  // set: tests fail with this error
	hooked     sync.Map
)

// Main brings the stack up, runs the tests, takes the stack down and returns the exit code for
// os.Exit. Progress lines go to stderr.
func Main(m *testing.M, opts ...stack.Option) (code int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		setState(nil, false, "integration stack not started in -short mode", nil)
		return m.Run()
	}
	st, own, err := start(opts)
	switch {
	case err == nil:
		setState(st, own, "", nil)
	case os.Getenv("QIM_IT_SKIP") == "1":
		setState(st, own, fmt.Sprintf("integration stack unavailable and QIM_IT_SKIP=1: %v", err), nil)
	default:
		fmt.Fprintf(os.Stderr, "itest: integration stack did not start: %v\n", err)
		setState(st, own, "", err)
	}
	if own && st != nil {
		stopOnSignal(st)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), DownTimeout)
			defer cancel()
			if derr := st.Down(ctx); derr != nil {
				fmt.Fprintf(os.Stderr, "itest: stack down: %v\n", derr)
				if code == 0 {
					code = 1
				}
			}
		}()
	}
	code = m.Run()
	if err != nil && skipReason == "" && code == 0 {
		code = 1 // no test asked for the stack, but it failed: still a failure
	}
	return code
}

func setState(st stack.Stack, own bool, skip string, fail error) {
	mu.Lock()
	defer mu.Unlock()
	current, owned, skipReason, failErr = st, own, skip, fail
}

func start(opts []stack.Option) (stack.Stack, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), UpTimeout)
	defer cancel()
	if path := os.Getenv("QIM_IT_ENDPOINTS"); path != "" {
		st, err := stack.Attach(path)
		if err != nil {
			return nil, false, fmt.Errorf("QIM_IT_ENDPOINTS=%s: %w", path, err)
		}
		if err := st.Up(ctx); err != nil {
			return st, false, fmt.Errorf("QIM_IT_ENDPOINTS=%s: stack not usable: %w", path, err)
		}
		return st, false, nil
	}
	if removed, err := stack.GC(stack.ProjectRoot(opts...)); len(removed) > 0 || err != nil {
		fmt.Fprintf(os.Stderr, "itest: removed leftover stacks %v (%v)\n", removed, err)
	}
	st := stack.NewProcess(append([]stack.Option{stack.WithProgress(os.Stderr)}, opts...)...)
	return st, true, st.Up(ctx)
}

// stopOnSignal takes the stack down on SIGINT/SIGTERM (Ctrl-C during go test) and exits.
func stopOnSignal(st stack.Stack) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		ctx, cancel := context.WithTimeout(context.Background(), DownTimeout)
		defer cancel()
		_ = st.Down(ctx)
		fmt.Fprintf(os.Stderr, "itest: %v: stack stopped\n", sig)
		os.Exit(2)
	}()
}

// Stack returns the package's stack (skipping or failing t like Endpoints).
func Stack(t testing.TB) stack.Stack {
	t.Helper()
	mu.Lock()
	st, skip, fail := current, skipReason, failErr
	mu.Unlock()
	switch {
	case skip != "":
		t.Skip(skip)
	case fail != nil:
		t.Fatalf("integration stack did not start: %v", fail)
	case st == nil:
		t.Fatal("itest: no stack: call itest.Main from TestMain")
	}
	if _, dup := hooked.LoadOrStore(t, true); !dup {
		t.Cleanup(func() { afterTest(t, st) })
	}
	Check(t)
	return st
}

// Endpoints returns the stack's endpoints, or skips t in -short mode / with QIM_IT_SKIP=1, or
// fails t when the stack could not start. It also registers the cleanup hook that names a dead
// server and, when t failed, attaches each server's last 50 log lines to t's output.
func Endpoints(t testing.TB) stack.Endpoints {
	t.Helper()
	return Stack(t).Endpoints()
}

// Check fails t now if a server of the stack is dead, naming it and showing its log tail.
func Check(t testing.TB) {
	t.Helper()
	mu.Lock()
	st := current
	mu.Unlock()
	if st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Check(ctx); err != nil {
		t.Fatalf("%s", describe(err))
	}
}

// Available reports whether tests can use the stack (false in -short mode, after a failed start).
func Available() bool {
	mu.Lock()
	defer mu.Unlock()
	return current != nil && skipReason == "" && failErr == nil
}

func afterTest(t testing.TB, st stack.Stack) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Check(ctx); err != nil && !errors.Is(err, stack.ErrNotRunning) {
		t.Errorf("%s", describe(err))
	}
	if !t.Failed() {
		return
	}
	ep := st.Endpoints()
	servers := []string{stack.ServerRedisCore, stack.ServerRedisMailbox, stack.ServerKafka}
	if ep.CQL != "" {
		servers = append(servers, stack.ServerCQL)
	}
	for _, s := range servers {
		tail, err := st.Logs(s, 50)
		if err != nil {
			tail = fmt.Sprintf("(no log: %v)", err)
		}
		t.Logf("---- last 50 log lines of %s ----\n%s", s, indent(tail))
	}
}

func describe(err error) string {
	var died *stack.ServerDiedError
	if errors.As(err, &died) {
		return fmt.Sprintf("server %s died (%s); last log lines:\n%s", died.Server, died.Detail, indent(died.LogTail))
	}
	return fmt.Sprintf("stack check: %v", err)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
