package itest

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// Command runs name in dir (env nil: this process's environment) and returns its standard
// output, failing t with the tails of both outputs when it fails: for tests that drive a client
// built outside Go (the C program, the TypeScript SDK's test runner).
func Command(ctx context.Context, t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
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
