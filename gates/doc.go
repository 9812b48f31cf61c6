// Package gates is the acceptance harness behind `qim-gate`: a registry of the ten release gates
// (docs/architecture.md, section 7), a runner that executes them in order with a fresh qim-it-*
// stack per run, and the machine-readable (<gate>.json) and human (report.html) reports.
//
// The package's one rule: a gate that cannot run, or that produced no evidence, fails. The runner,
// not the gate, decides Passed, from the checks the gate recorded; a gate with no checks fails.
package gates
