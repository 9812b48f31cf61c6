// Package sdklane is loadgen's SDK regression lane (loadgen.Lane): a share of the load run's
// connections driven by the real client SDK (package sdk) instead of frame-level code, so the
// SDK's state machine, SQLite store, pending sends, cursors and dedup run under load. It lives
// apart from package loadgen so that frame-only users of loadgen do not link the SDK.
//
// It owns: opening env.Clients SDK clients in 1:1 pairs, each a user of its own with its own
// file store in a temporary directory (client.go); an open-model send schedule per client
// (loadgen.Scheduler; Send only records the pending row, so no send waits for an earlier ACK);
// the per-direction ledger of what the SDK reported — Send's client_message_id, Committed,
// Failed, and the receiver's MessagesAdded — and its verification after a bounded settle wait
// (ledger.go); the lane's report and verdict (report.go); when LaneEnv.History is set, the same
// SDK facts as the chaos checker's history — Invoke, Ok/Fail/Info, App-level Deliver (history.go).
//
// A pair passes when every Send of each side was Committed (none Failed, none still pending)
// and every ordinal one side sent surfaced at the other exactly once. Dedup by message_id is the
// SDK's job: a second MessagesAdded for an ordinal is a failure whether or not it carries the
// same message_id.
//
// It must never:
//   - carry its own copy of client logic (state machine, cursor, dedup, SEND/ACK handling): it
//     only calls the SDK's public API and judges what the SDK surfaces to an app;
//   - use the SDK's in-memory store: the file store's commits are part of what is exercised;
//   - let a send wait for the previous one's outcome (a closed model hides stalls);
//   - report a pass without a completed verification, or on a lane that sent nothing;
//   - log or report a token, the signing secret or a message body.
package sdklane
