// Package identity owns the two facts that make a message_id unique: the writer_id a
// ConversationWriter holds through a Redis lease, and the persisted HLC windows it issues
// message_id time components from (docs/architecture.md, invariant 4; the message_id bit layout
// is in docs/adr/0001-contract-values.md).
//
// What it owns:
//
//   - Clock: the deterministic HLC core, no I/O. It issues (time_ms, logical) pairs that strictly
//     increase and fall only inside windows it was given, and refuses (WindowExhaustedError) once
//     the installed windows are used up.
//   - Lease: claims the lowest free writer_id of a region (or an explicit one, QIM_WRITER_ID style
//     for StatefulSets) with SET NX PX and a random owner value, renews it every
//     contract.WriterLeaseRenew, and closes Lost() when it can no longer prove ownership.
//   - Issuer: Clock + Redis. It claims a contract.HLCWindow millisecond window for
//     (region_id, writer_id) strictly above the stored high-water mark in the core Redis
//     (appendfsync always), installs it only after the reply (so only persisted windows are
//     used), claims the next one contract.HLCRenewBefore early, and packs contract.MessageID.
//
// Why windows and not a process-local last_ms: a fixed writer_id, a crash and restart, or a clock
// set back would otherwise hand out a time_ms the previous incarnation already used, and clients
// deduplicating by message_id would silently drop a message. Because every window starts above
// every window claimed before for the same (region, writer), two incarnations — even two live
// processes that wrongly share a writer_id — can never issue the same id. The lease keeps
// writer_ids distinct so that windows track wall-clock time; it is not what makes ids unique.
// The price: during a long Redis outage a writer stops issuing once its safe window runs out.
//
// What it must never do: install a window before Redis replied with it; issue an id outside an
// installed window; put a TTL on or delete the high-water mark key (qim:hlc:*), which would let a
// later window reuse old ids; log owner values; call Redis on the Next hot path.
package identity
