// Package chaos (gates/chaos) is Q-IM's fault matrix: each cell runs open-model load (1:1 pairs on the frame
// lane plus the SDK lane) against a deployment of real services on a real stack, injects one
// fault mid-window (a SIGKILL at a commit failpoint, a killed broker, a paused writer, a rolling
// restart while the broker is unreachable, ...), heals it, waits for the backlog to settle, and
// then judges the cell three ways: the history checker (chaos/check) over what the clients saw
// and the durable history they read back, the orphan audit (audit/) over the cell's Outbox range,
// and the always-zero invariant counters of every service. `qim-gate run chaos` drives it.
//
// It owns: the cell catalogue (cells.go), the fault actions on services and servers (faults.go),
// one cell's life (cell_run.go), the matrix and its progress (matrix.go) and the JSON and HTML
// reports (report.go, html.go).
//
// It must never:
//   - pass a cell on missing evidence: a cell whose fault did not happen (a failpoint never hit,
//     a server that was not down), whose load before the fault was below the floor, or whose
//     checker saw no acknowledged send fails;
//   - heal a fault by restarting something the cell did not break (a crash it did not cause is
//     a finding, not noise);
//   - judge latency: cells are about loss, duplication, order and stalls; perf is gate 5.
package chaos
