// Package contract is the contract core in code: every constant the services, SDK and harness share
// (docs/architecture.md, section 6; docs/contract-constants.md), the identifier and sequence types
// with their validation rules, routing from a user or conversation to its lane, virtual bucket,
// mailbox shard and commit bucket, and the deterministic derivations (dispatch_id, endpoint scope,
// conversation ids).
//
// Contract constants are defined here and nowhere else; the contract lint rejects redeclarations.
// Immutable values carry compile-time guards (guards.go): changing LaneCount or the MailboxSeq bit
// widths must fail the build, because existing data, cursors and lane assignments depend on them.
//
// This package must never do I/O, read the clock or the environment, or import another package of
// this module: it is the root of the dependency graph and every function in it is deterministic.
package contract
