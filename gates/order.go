package gates

// ReleaseOrder returns the release run's gates in order (docs/architecture.md, section 7), with
// perf as gate 5. The perf gate is a parameter because it lives in gates/perf, above this
// package (gates/release wires the two).
func ReleaseOrder(perf Gate) []Gate {
	return []Gate{
		lintGate{},
		testGate{},
		servicesGate{},
		e2eGate{},
		perf,
		theavyGate{},
		redisArtifactsGate{},
		invariantsGate{},
		auditGate{},
		chaosGate{},
	}
}
