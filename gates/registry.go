package gates

import "github.com/qim-dev/qim/loadgen/sdklane"

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
		chaosGate{},
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
