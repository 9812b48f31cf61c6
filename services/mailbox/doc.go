// Package mailbox is the MailboxNode: it materializes the qim.dispatch records of the
// MailboxShards it owns into per-user mailboxes in Redis and serves PULL_MAILBOX and the
// AUTH_OK offline check to the gateway.
//
// It owns: the static assignment of its shards' dispatch partitions (no consumer group, no
// rebalance) and the start position of each (watermark + 1 after a self-check of log offsets);
// one bounded FIFO and one worker per shard, a full FIFO pausing only its partition; the
// validation of every dispatch record before it is applied; the entries built from it (the
// sender's copy carries the client_message_id anchor, the body only when the dispatch inlined
// it); the best-effort push of durable entries to the gateway; and the device cursor, which
// moves only through PULL_MAILBOX.
//
// It must never: advance a shard watermark past a record whose entries are not all stored (the
// store writes both in one script); skip or reorder a record of a partition; keep running after
// a record it cannot apply (bad record, digest conflict, fencing, Redis error) — it stops and a
// restart replays from the watermark; move a device cursor from a push; serve pulls before its
// shards caught up, or serve a pull or offline check of a user whose shard it does not own (it
// refuses UNAVAILABLE, counted, and the gateway retries at the owner); block materialization on
// the gateway; log message bodies, keys or cursors
// of named users.
package mailbox
