package stack_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Directories left by earlier runs whose test binary died (their servers died with it).
	if removed, err := stack.GC(os.TempDir()); err != nil || len(removed) > 0 {
		fmt.Fprintf(os.Stderr, "stack GC removed %v (err %v)\n", removed, err)
	}
	os.Exit(m.Run())
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

func TestProcessStackWithCQL(t *testing.T) {
	st := upStack(t, 4*time.Minute, stack.WithCQL(true))
	ep := st.Endpoints()
	t.Logf("endpoints: %+v", ep)
	if ep.CQL == "" || ep.RedisCore == "" || ep.RedisMailbox == "" || len(ep.KafkaBrokers) != 1 || ep.DispatchShards != 64 {
		t.Fatalf("incomplete endpoints: %+v", ep)
	}
	if saved, err := stack.ReadEndpoints(ep.Dir); err != nil || saved.CQL != ep.CQL {
		t.Fatalf("endpoints.json = %+v, %v", saved, err)
	}
	redisRoundTrip(t, ep.RedisCore)
	redisRoundTrip(t, ep.RedisMailbox)
	kafkaRoundTrip(t, ep.KafkaBrokers, 5)
	cqlRoundTrip(t, ep.CQL)
	if err := st.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if tail, err := st.Logs(stack.ServerCQL, 5); err != nil || tail == "" {
		t.Fatalf("Logs(cql) = %q, %v", tail, err)
	}
	logProcesses(t, st) // RSS after the round trips

	procs := st.(stack.Introspector).Processes()
	t0 := time.Now()
	if err := st.Down(context.Background()); err != nil {
		t.Fatalf("Down: %v", err)
	}
	t.Logf("Down took %.1fs", time.Since(t0).Seconds())
	for _, p := range procs {
		if alive(p.PID) {
			t.Errorf("%s pid %d still alive after Down", p.Server, p.PID)
		}
	}
	if _, err := os.Stat(ep.Dir); !os.IsNotExist(err) {
		t.Errorf("project dir %s still there after Down (%v)", ep.Dir, err)
	}
	if err := st.Down(context.Background()); err != nil {
		t.Errorf("second Down: %v", err)
	}
	if err := st.Check(context.Background()); !errors.Is(err, stack.ErrNotRunning) {
		t.Errorf("Check after Down = %v, want ErrNotRunning", err)
	}
}

func TestTwoProcessStacksSideBySide(t *testing.T) {
	root := t.TempDir()
	stacks := make([]stack.Stack, 2)
	errs := make(chan error, 2)
	for i := range stacks {
		stacks[i] = stack.NewProcess(stack.WithRoot(root), stack.WithDispatchShards(8), stack.WithProgress(tWriter{t}))
		t.Cleanup(func() { _ = stacks[i].Down(context.Background()) })
		go func() { errs <- stacks[i].Up(context.Background()) }()
	}
	for range stacks {
		if err := <-errs; err != nil {
			t.Fatalf("Up: %v", err)
		}
	}
	a, b := stacks[0].Endpoints(), stacks[1].Endpoints()
	if a.Dir == b.Dir {
		t.Fatalf("both stacks use %s", a.Dir)
	}
	seen := map[string]bool{}
	for _, addr := range []string{a.RedisCore, a.RedisMailbox, a.KafkaBrokers[0], b.RedisCore, b.RedisMailbox, b.KafkaBrokers[0]} {
		if seen[addr] {
			t.Fatalf("address %s used twice: %+v %+v", addr, a, b)
		}
		seen[addr] = true
	}
	for i, st := range stacks {
		logProcesses(t, st)
		ep := st.Endpoints()
		redisRoundTrip(t, ep.RedisCore)
		redisRoundTrip(t, ep.RedisMailbox)
		kafkaRoundTrip(t, ep.KafkaBrokers, int32(3+i))
	}
	// Stop the second one the way `qim-gate stack down --project` does: from pid files alone.
	procs := stacks[1].(stack.Introspector).Processes()
	if err := stack.DownProject(root, b.Project); err != nil {
		t.Fatalf("DownProject: %v", err)
	}
	for _, p := range procs {
		if alive(p.PID) {
			t.Errorf("%s pid %d alive after DownProject", p.Server, p.PID)
		}
	}
	if _, err := os.Stat(b.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after DownProject", b.Dir)
	}
	if err := stack.DownProject(root, b.Project); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second DownProject = %v, want not-exist", err)
	}
	redisRoundTrip(t, a.RedisCore) // the first stack is untouched
}

func TestKilledKafkaIsReported(t *testing.T) {
	st := upStack(t, 2*time.Minute, stack.WithDispatchShards(4))
	pid := pidOf(t, st, stack.ServerKafka)
	t0 := time.Now()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var died *stack.ServerDiedError
	for time.Since(t0) < 5*time.Second {
		if err := st.Check(context.Background()); errors.As(err, &died) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if died == nil {
		t.Fatalf("Check did not report the killed kafka within 5s")
	}
	t.Logf("Check reported %q after %v: %s", died.Server, time.Since(t0).Round(time.Millisecond), died.Detail)
	if died.Server != stack.ServerKafka || strings.TrimSpace(died.LogTail) == "" || strings.HasPrefix(died.LogTail, "(no log") {
		t.Fatalf("got %+v", died)
	}
	if !strings.Contains(died.Error(), "kafka is down") {
		t.Errorf("error text: %v", died)
	}
}

func TestGCRemovesDeadProjects(t *testing.T) {
	root := t.TempDir()
	mk := func(name string) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// A dead process: one that already exited.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead := mk("qim-it-dead")
	writePid(t, dead, "redis-core", done.Process.Pid, 12345)
	// A live process of ours: a sleep whose working directory is the project dir.
	live := mk("qim-it-live")
	sleep := exec.Command("sleep", "60")
	sleep.Dir = live
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	writePid(t, live, "kafka", sleep.Process.Pid, startTime(t, sleep.Process.Pid))
	// A project that is just starting (no pid files yet) and an unrelated dir.
	mk("qim-it-starting")
	mk("not-a-project")

	removed, err := stack.GC(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != "qim-it-dead" {
		t.Fatalf("GC removed %v, want [qim-it-dead]", removed)
	}
	for _, keep := range []string{"qim-it-live", "qim-it-starting", "not-a-project"} {
		if _, err := os.Stat(filepath.Join(root, keep)); err != nil {
			t.Errorf("GC removed %s: %v", keep, err)
		}
	}
}

func writePid(t *testing.T, dir, server string, pid int, start uint64) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "pids", server+".pid"), fmt.Appendf(nil, "%d %d\n", pid, start), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	var st uint64
	if _, err := fmt.Sscan(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[19], &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestMissingPrerequisitesNameTheFix(t *testing.T) {
	cases := []struct {
		opt  stack.Option
		want string
	}{
		{stack.WithRedisServer("/nonexistent/redis-server"), "apt-get install -y redis-server"},
		{stack.WithInfraCache(t.TempDir()), "run scripts/fetch-infra.sh"},
		{stack.WithJavaHome("/nonexistent/jdk"), "openjdk-17-jdk-headless"},
	}
	for _, c := range cases {
		err := stack.NewProcess(stack.WithRoot(t.TempDir()), c.opt).Up(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Up = %v, want an error containing %q", err, c.want)
		}
	}
}

func TestServerDyingDuringUpFailsFast(t *testing.T) {
	st := stack.NewProcess(stack.WithRoot(t.TempDir()), stack.WithDispatchShards(2),
		stack.WithKafkaProperty("log.segment.bytes", "not-a-number"), stack.WithProgress(tWriter{t}))
	t.Cleanup(func() { _ = st.Down(context.Background()) })
	t0 := time.Now()
	err := st.Up(context.Background())
	var died *stack.ServerDiedError
	if !errors.As(err, &died) || died.Server != stack.ServerKafka || strings.TrimSpace(died.LogTail) == "" {
		t.Fatalf("Up = %v, want *ServerDiedError for kafka with a log tail", err)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Fatalf("Up took %v to report the dead kafka (its readiness timeout is 90s)", d)
	}
	t.Logf("Up failed after %v: %s", time.Since(t0).Round(time.Millisecond), firstLines(err.Error(), 4))
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
