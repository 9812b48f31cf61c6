package svc_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
)

// The package's deployments share one build of this checkout's qim (each used to build its own).
var (
	buildOnce sync.Once
	builtDir  string
	builtBin  string
	buildErr  error
)

// deploy returns a context bounding the test and a Set of this checkout's qim on the package's
// stack, stopped when the test ends.
func deploy(t *testing.T) (context.Context, *svc.Set) {
	t.Helper()
	ep := itest.Endpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	buildOnce.Do(func() {
		if builtDir, buildErr = os.MkdirTemp("", "qim-svc-bin-"); buildErr == nil {
			builtBin, buildErr = svc.Build(ctx, "../..", builtDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	set, err := svc.New(builtBin, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.StopAll() })
	return ctx, set
}

// removeBuild runs after the package's tests.
func removeBuild() {
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
}
