package e2e

import (
	"context"
	"os"
	"testing"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// freshDeployment is the developer loop's deployment: a fresh stack, this checkout's qim built,
// n instances of each scaled service started; all of it stops when the test ends.
func freshDeployment(t *testing.T, n int) (*svc.Set, stack.Endpoints) {
	t.Helper()
	ctx := context.Background()
	st := stack.NewProcess(stack.WithProgress(os.Stderr))
	if err := st.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Down(ctx) })
	bin, err := svc.Build(ctx, "../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set, err := svc.NewInstances(bin, st.Endpoints(), n)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.StopAll() })
	return set, st.Endpoints()
}
