package gates

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/loadgen/sdklane"
)

// plannedGate stands in for a gate whose implementation has not landed. It exists so `list` shows
// the whole release pipeline and `run --full` fails honestly instead of skipping work it lacks.
type plannedGate struct{ name, title, plan string }

func (g plannedGate) Name() string  { return g.name }
func (g plannedGate) Title() string { return g.title }
func (g plannedGate) Run(_ context.Context, _ *Env, r *Result) {
	r.Fail(fmt.Errorf("gates: %s has no implementation in this build (%s); a missing gate fails the run", g.name, g.plan))
}

// Registry returns the gates in release order (docs/architecture.md, section 7).
func Registry() []Gate {
	return []Gate{
		lintGate{},
		testGate{},
		servicesGate{},
		e2eGate{},
		perfGate{newLane: sdklane.New},
		theavyGate{},
		redisArtifactsGate{},
		invariantsGate{},
		auditGate{},
	}
}

// Lookup finds a gate by name.
func Lookup(name string) (Gate, bool) {
	for _, g := range Registry() {
		if g.Name() == name {
			return g, true
		}
	}
	return nil, false
}
