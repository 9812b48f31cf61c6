package ab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/perf"
)

// Both sides are checked out from their commits (never the working tree), and removed after.
func TestABChecksOutBothCommits(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	must := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(gates.Git(ctx, repo, "init", "-q"))
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(repo, "f"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old")
	must(gates.Git(ctx, repo, "add", "f"))
	must(gates.Git(ctx, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old"))
	must(gates.Git(ctx, repo, "tag", "base"))
	write("new")
	must(gates.Git(ctx, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "new"))
	write("uncommitted")

	o := ABOptions{Root: repo, Baseline: "base", Candidate: "HEAD", ReportDir: t.TempDir()}
	sides, cleanup, err := checkoutSides(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"old", "new"} {
		b, err := os.ReadFile(filepath.Join(sides[i].dir, "f"))
		if err != nil || string(b) != want || len(sides[i].Commit) != 40 {
			t.Fatalf("%s side holds %q (%v), commit %q; want %q", sides[i].Name, b, err, sides[i].Commit, want)
		}
	}
	cleanup()
	if _, err := os.Stat(sides[0].dir); !os.IsNotExist(err) {
		t.Fatalf("the baseline worktree is still there after cleanup: %v", err)
	}
	o.Baseline = "no-such-ref"
	if _, _, err := checkoutSides(ctx, o); !errors.Is(err, ErrAB) {
		t.Fatalf("an unknown baseline: %v, want ErrAB", err)
	}
}

// An ab run drives the SDK lane as the perf gate of `qim-gate run perf` does: with a bare
// perfGate{} every run with --sdk-clients above 0 failed "SDK lane not available in this build".
func TestABRunsTheRegistryPerfGate(t *testing.T) {
	gate, err := abGate()
	if err != nil {
		t.Fatal(err)
	}
	if !perf.HasSDKLane(gate) {
		t.Fatalf("ab runs %T without an SDK lane", gate)
	}
}
