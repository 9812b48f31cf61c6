package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// forbidden are the modules a product that imports only the SDK must never inherit: the
// harness's (testcontainers, moby/docker, cobra), the servers' stores (gocql, franz-go), and the
// root module itself, which holds the services (ADR-0031).
var forbidden = []string{
	"github.com/testcontainers/",
	"github.com/moby/",
	"github.com/docker/",
	"github.com/gocql/",
	"github.com/spf13/cobra",
	"github.com/twmb/franz-go",
	"github.com/redis/go-redis",
	"github.com/qim-dev/qim@", // the root module: the services and the harness
	"github.com/qim-dev/qim/services",
}

// inherited returns the forbidden modules named in the output of `go mod graph`.
func inherited(graph string) []string {
	seen := map[string]bool{}
	var out []string
	for _, edge := range strings.Split(graph, "\n") {
		for _, mod := range strings.Fields(edge) {
			if !strings.Contains(mod, "@") {
				continue // the main module
			}
			for _, f := range forbidden {
				if strings.HasPrefix(mod, f) && !seen[mod] {
					seen[mod] = true
					out = append(out, mod)
				}
			}
		}
	}
	return out
}

// TestInheritedJudgesTheGraph: the judge is not a test that cannot fail. A graph holding the
// harness's or the servers' modules is refused, the client libraries are not.
func TestInheritedJudgesTheGraph(t *testing.T) {
	graph := "github.com/qim-dev/qim/examples/sdk-consumer github.com/qim-dev/qim/sdk@v0.0.0\n" +
		"github.com/qim-dev/qim/sdk@v0.0.0 github.com/qim-dev/qim/contract@v0.0.0\n" +
		"github.com/qim-dev/qim/sdk@v0.0.0 github.com/qim-dev/qim@v0.0.0\n" +
		"github.com/qim-dev/qim@v0.0.0 github.com/testcontainers/testcontainers-go@v0.45.0\n" +
		"github.com/qim-dev/qim@v0.0.0 github.com/gocql/gocql@v1.7.0\n"
	got := strings.Join(inherited(graph), " ")
	want := "github.com/qim-dev/qim@v0.0.0 github.com/testcontainers/testcontainers-go@v0.45.0 github.com/gocql/gocql@v1.7.0"
	if got != want {
		t.Fatalf("inherited = %q, want %q", got, want)
	}
}

// TestSDKConsumerInheritsOnlyTheClient builds examples/sdk-consumer, a module that imports the
// SDK as a product would, and fails if its module graph holds any forbidden module. It logs the
// size of what the consumer inherits (modules, go.sum lines), the measurement of ADR-0031.
func TestSDKConsumerInheritsOnlyTheClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command")
	}
	const dir = "sdk-consumer"
	goCmd(t, dir, "build", "-o", os.DevNull, ".")
	graph := goCmd(t, dir, "mod", "graph")
	if bad := inherited(graph); len(bad) > 0 {
		t.Fatalf("a module importing only the SDK inherits %v:\n%s", bad, graph)
	}
	mods := strings.Count(goCmd(t, dir, "list", "-m", "all"), "\n")
	sum, err := os.ReadFile(dir + "/go.sum")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the SDK consumer's build list holds %d modules; its go.sum %d lines", mods, bytes.Count(sum, []byte("\n")))
}

// goCmd runs the go command in dir, outside any workspace and without touching go.mod or
// go.sum: a stale go.sum fails the test instead of being repaired.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return stdout.String()
}
