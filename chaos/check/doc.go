// Package check decides, from a chaos cell's history alone (chaos/history), whether the system
// kept its delivery contract through a fault. It is the checker discipline of
// docs/architecture.md, section 8, applied to fault runs: loadgen/flow.go keeps the same ledger
// live for one pair while a gate runs; this package judges a whole recorded history afterwards,
// both lanes at once, in Jepsen's vocabulary (ok / fail / info).
//
// It owns the verdicts and their rules, one file per rule:
//
//	outcome.go   each send's final outcome; SEND_ACK and a definite error for one send;
//	             UNRESOLVED (an SDK send the SDK never resolved for its app)
//	delivery.go  LOST, FAILED_VISIBLE, UNKNOWN_DELIVERED / UNKNOWN_ABSENT
//	duplicate.go DUPLICATE (two message ids for one send, or one id twice after the SDK's dedup)
//	reuse.go     REUSED (one identity naming two things: seq, send or message id)
//	order.go     ORDER (real-time order within a conversation and in each recipient's mailbox),
//	             LATE_COMMIT (info: a commit finished after later ones, no real-time order broken)
//	gap.go       GAP (committed, in durable history, never delivered) and PHANTOM
//	stall.go     STALLED (a mailbox or a writer frozen past the heal)
//	recovery.go  how long after the fault sends were acknowledged and the backlog drained
//	group.go     the recipients of a group send (its recorded members but the sender), LOST per
//	             member, GAP of an info group send that reached only some members
//
// ledger.go indexes the history once (maps keyed by send and message id, one sort), so every
// rule is linear in the events; result.go holds the verdicts, the findings and the summary.
//
// It must never:
//   - pass on missing evidence: a history without one acknowledged send is not passed, and an
//     acknowledged send nobody received is LOST even when nothing else is known about it;
//   - count a push (PUSH_EVENTS) as a delivery: push is best effort, only a mailbox pull or the
//     SDK's MessagesAdded proves that a message reached its recipient;
//   - fail an info send for appearing or for not appearing, only for appearing twice;
//   - infer a loss from a conversation_seq hole (invariant 3: holes are legal): losses are named
//     by send, never by seq;
//   - do I/O, read a clock or start anything: the same history and options give the same
//     result, so a verdict can be re-derived from a stored log.
package check
