package svc_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

func TestMain(m *testing.M) {
	code := itest.Main(m, stack.WithDispatchShards(8))
	removeBuild()
	os.Exit(code)
}

// One MailboxNode (it needs only redis-mailbox and Kafka) through every state: starting,
// healthy, paused, killed, crashing at start-up by itself, and paused when StopAll runs.
func TestProcessControl(t *testing.T) {
	ctx, set := deploy(t)
	const name = svc.Mailbox
	if err := set.ExitErr(name); !errors.Is(err, svc.ErrNotStarted) {
		t.Fatalf("ExitErr before start = %v, want ErrNotStarted", err)
	}

	t.Run("StartNoWait", func(t *testing.T) { testStartNoWait(t, ctx, set, name) })
	t.Run("PauseResume", func(t *testing.T) { testPauseResume(t, ctx, set, name) })
	t.Run("Kill", func(t *testing.T) { testKill(t, set, name) })
	t.Run("CrashAtStartUp", func(t *testing.T) { testCrashAtStartUp(t, ctx, set, name) })
	t.Run("StopAllWhilePaused", func(t *testing.T) { testStopAllWhilePaused(t, ctx, set, name) })
}

func testStartNoWait(t *testing.T, ctx context.Context, set *svc.Set, name string) {
	if err := set.StartNoWait(name); err != nil {
		t.Fatal(err)
	}
	if err := set.StartNoWait(name); !errors.Is(err, svc.ErrRunning) {
		t.Fatalf("second StartNoWait = %v, want ErrRunning", err)
	}
	t0 := time.Now()
	if err := set.WaitHealthy(ctx, name, time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s healthy %v after StartNoWait returned", name, time.Since(t0).Round(time.Millisecond))
	if exited, err := set.WaitExit(name, 100*time.Millisecond); exited || err != nil {
		t.Fatalf("WaitExit of a healthy service = %v, %v", exited, err)
	}
	if err := set.ExitErr(name); !errors.Is(err, svc.ErrRunning) {
		t.Fatalf("ExitErr while running = %v, want ErrRunning", err)
	}
}

func testPauseResume(t *testing.T, ctx context.Context, set *svc.Set, name string) {
	if err := set.Resume(name); err == nil {
		t.Fatal("Resume of a running service succeeded")
	}
	if err := set.Pause(name); err != nil {
		t.Fatal(err)
	}
	if err := set.Pause(name); err == nil {
		t.Fatal("second Pause succeeded")
	}
	if !set.Running(name) {
		t.Fatal("a paused service does not count as running")
	}
	if err := set.WaitHealthy(ctx, name, 1500*time.Millisecond); err == nil {
		t.Fatal("a paused service answered /healthz")
	}
	if err := set.Resume(name); err != nil {
		t.Fatal(err)
	}
	if err := set.WaitHealthy(ctx, name, 10*time.Second); err != nil {
		t.Fatalf("after Resume: %v", err)
	}
}

func testKill(t *testing.T, set *svc.Set, name string) {
	if err := set.Kill(name); err != nil {
		t.Fatal(err)
	}
	exited, err := set.WaitExit(name, time.Second)
	if !exited || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("WaitExit after Kill = %v, %v; want true, signal: killed", exited, err)
	}
	if err := set.ExitErr(name); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("ExitErr after Kill = %v", err)
	}
	if set.Running(name) || set.Pid(name) != 0 {
		t.Fatal("a killed service still counts as running")
	}
	if err := set.Kill(name); !errors.Is(err, svc.ErrNotRunning) {
		t.Fatalf("second Kill = %v, want ErrNotRunning", err)
	}
}

func testCrashAtStartUp(t *testing.T, ctx context.Context, set *svc.Set, name string) {
	if err := set.StartNoWait(name, "QIM_MAILBOX_SHARD_COUNT=many"); err != nil {
		t.Fatal(err)
	}
	exited, err := set.WaitExit(name, 30*time.Second)
	if !exited || err == nil {
		t.Fatalf("WaitExit with a bad config = %v, %v; want an exit with an error", exited, err)
	}
	t.Logf("exited by itself: %v", err)
	if err := set.WaitHealthy(ctx, name, 5*time.Second); !errors.Is(err, svc.ErrExited) {
		t.Fatalf("WaitHealthy of a crashed service = %v", err)
	}
}

func testStopAllWhilePaused(t *testing.T, ctx context.Context, set *svc.Set, name string) {
	if err := set.Start(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := set.Pause(name); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := set.StopAll(); err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	t.Logf("StopAll with %s paused took %v", name, d.Round(time.Millisecond))
	if d > 10*time.Second { // Stop falls back to SIGKILL after 15 s
		t.Fatalf("StopAll with a paused service took %v", d)
	}
	if exited, err := set.WaitExit(name, 0); !exited || err != nil {
		t.Fatalf("after StopAll: exited %v, %v; want a clean exit on SIGTERM", exited, err)
	}
}
