package proc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sh(t *testing.T, script string, env ...string) (*Process, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "child.log")
	p, err := Start(Spec{Name: "child", Argv: []string{"/bin/sh", "-c", script}, Env: BaseEnv(env...), LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(5 * time.Second) })
	return p, log
}

// The child sees exactly the environment it was given: the base variables and its own, never
// the harness's QIM_* variables.
func TestChildEnvironmentIsExplicit(t *testing.T) {
	t.Setenv("QIM_IT_SKIP", "1")
	p, log := sh(t, "env", "QIM_WRITER_LISTEN=127.0.0.1:1")
	<-p.Done()
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if slices.Contains(lines, "QIM_IT_SKIP=1") || !slices.Contains(lines, "QIM_WRITER_LISTEN=127.0.0.1:1") {
		t.Fatalf("child environment %q", lines)
	}
	if path, ok := os.LookupEnv("PATH"); ok && !slices.Contains(lines, "PATH="+path) {
		t.Fatalf("child lost PATH: %q", lines)
	}
}

// The process gets its own group, and the group is what the signals reach: a grandchild dies
// with Kill.
func TestSignalsReachTheGroup(t *testing.T) {
	p, log := sh(t, "sleep 60 & echo $!; wait")
	grandchild, err := strconv.Atoi(waitLog(t, log, ""))
	if err != nil {
		t.Fatal(err)
	}
	if pgid, err := syscall.Getpgid(grandchild); err != nil || pgid != p.Pid() {
		t.Fatalf("grandchild group %d (%v), want the child's %d", pgid, err, p.Pid())
	}
	if err := p.Kill(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(grandchild, 0) == nil && State(grandchild) != 'Z' {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d outlived the group's SIGKILL", grandchild)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Signal after exit = %v, want ErrNotRunning", err)
	}
}

// Pause returns with the process stopped; Stop of a paused process wakes it to handle SIGTERM.
func TestPauseResumeStop(t *testing.T) {
	p, log := sh(t, "trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done")
	waitLog(t, log, "ready")
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if ms := groupMembers(p.Pid()); !frozen(ms, p.Pid()) || !p.Paused() || p.Pause() == nil {
		t.Fatalf("after Pause: group %s, paused %v", describe(ms), p.Paused())
	}
	if err := p.Resume(); err != nil || p.Paused() || p.Resume() == nil {
		t.Fatalf("Resume = %v, paused %v", err, p.Paused())
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatalf("Stop of a paused process: %v", err)
	}
	if p.Alive() || p.Err() != nil {
		t.Fatalf("after Stop: alive %v, err %v", p.Alive(), p.Err())
	}
}

// A process that ignores the stop signal is ended anyway, and Stop says so.
func TestStopEscalates(t *testing.T) {
	p, log := sh(t, "trap '' TERM QUIT; echo ready; while :; do sleep 0.05; done")
	waitLog(t, log, "ready")
	err := p.Stop(syscall.SIGTERM, 100*time.Millisecond)
	if err == nil || p.Alive() {
		t.Fatalf("Stop = %v, alive %v; want an error and the process gone", err, p.Alive())
	}
}

// waitLog waits until the log's first line is complete (and is want, unless want is empty) and
// returns it. The bound is a hang guard, not a timing assertion.
func waitLog(t *testing.T, log, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(log)
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			if want != "" && line != want {
				t.Fatalf("child wrote %q, want %q", line, want)
			}
			return line
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the child wrote no line within 10 s")
	return ""
}
