package itest

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandWaitDelay bounds how long Command waits for the outputs to close once the process
// ended or was killed: a grandchild that kept them open must not hold the test.
const commandWaitDelay = 5 * time.Second

// Command runs name in dir (env nil: this process's environment) and returns its standard
// output, failing t with the tails of both outputs when it fails: for tests that drive a client
// built outside Go (the C program, the TypeScript SDK's test runner).
//
// The command runs in a process group of its own, and ctx's end kills the whole group: npm
// starts node through a shell, and killing npm alone left node running, holding the output
// pipe, so the test blocked until go test's own timeout (a hung TypeScript suite in make test).
func Command(ctx context.Context, t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = commandWaitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, Tail(stdout.String(), 200), Tail(stderr.String(), 80))
	}
	return stdout.String()
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
