package gates

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/e2e"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/stack/stacktest"
	"github.com/qim-dev/qim/gates/svc"
)

// A deliberately broken scenario must fail gate 4 and name the scenario, while the passing one
// is still reported as passing.
func TestE2EGateFailsOnABrokenScenario(t *testing.T) {
	ep := stack.Endpoints{Dir: t.TempDir(), DispatchShards: 64}
	set, err := svc.New("/nonexistent/qim", ep)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Progress: &bytes.Buffer{},
		Stack:      func(context.Context) (stack.Stack, error) { return stacktest.Fake{EP: ep}, nil },
		Deployment: func(context.Context) (*svc.Set, error) { return set, nil }}
	g := e2eGate{scenarios: func() []e2e.Scenario {
		return []e2e.Scenario{
			{Name: "works", Run: func(context.Context, *e2e.Env) error { return nil }},
			{Name: "broken-on-purpose", Run: func(context.Context, *e2e.Env) error { return errors.New("lost a message") }},
		}
	}}
	r := RunOne(context.Background(), g, env, time.Hour)
	if r.Passed {
		t.Fatal("gate passed with a broken scenario")
	}
	var failed []string
	for _, c := range r.Checks {
		if !c.Passed {
			failed = append(failed, c.Name+": "+c.Detail)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "broken-on-purpose") || !strings.Contains(failed[0], "lost a message") {
		t.Fatalf("failed checks = %v", failed)
	}
}
