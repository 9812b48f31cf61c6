// Package release is the release run's list of gates: the gates of package gates in their order,
// with gate 5 from gates/perf. It sits above both, so neither imports the other's layer: gates
// holds Gate, Result, Env, the runner and the small gates; gates/perf imports gates; release
// imports both; the A/B run (gates/ab) and the CLI import release.
package release

import (
	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/perf"
)

// Registry returns the gates in release order (docs/architecture.md, section 7).
func Registry() []gates.Gate { return gates.ReleaseOrder(perf.New()) }

// Lookup finds a gate by name: a release gate or one run by name only (gates.OnDemand).
func Lookup(name string) (gates.Gate, bool) {
	for _, g := range append(Registry(), gates.OnDemand()...) {
		if g.Name() == name {
			return g, true
		}
	}
	return nil, false
}
