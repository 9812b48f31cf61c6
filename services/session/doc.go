// Package session is the SessionProjection: it keeps every user's session list (the set of
// conversations the user takes part in, ordered by last activity) and the user-level read
// watermarks, and serves PULL_SESSION_LIST and MARK_READ to the gateway.
//
// It owns:
//   - its own static consumer of the qim.dispatch partitions of its shards
//     (QIM_SESSION_OWNED_SHARDS, every shard by default; no consumer group) and one checkpoint
//     per partition in the core Redis, bound to the Kafka cluster id, the topic id (KIP-516) and
//     the partition count, advanced by compare-and-set in the same script that writes every
//     recipient of the record (projector.go, binding.go); instances owning disjoint shards share
//     the binding and never touch each other's checkpoints;
//   - the per-user conversation set `qim:sess:list:<tenant>:<user>`, updated with ZADD GT so
//     arrival order never moves a conversation back (store.go);
//   - the per-user read watermark `qim:read:<tenant>:<user>` (conversation → read seq, shared by
//     all the user's devices), which only moves forward; the sender's own copy of a message moves
//     it to that message ("sending marks it read");
//   - the in-process snapshot of each recently active user's list with dirty markers, so a heavy
//     user's list is not rebuilt per message (snapshot.go);
//   - the session-list row: the head (the latest canonical MessageRecord, read from the writer's
//     hot history, never a second copy) and the unread count by definition (unread.go), for a
//     group clipped to the user's membership intervals (visibility.go; the intervals are the
//     writer's, read only here).
//
// It must never:
//   - serve a user of a shard it does not own: snapshots and dirty markers are process-local, so
//     only the owner's are fresh; such a request is refused UNAVAILABLE (counted in
//     qim_session_unowned_requests_total) and the gateway retries at the owner;
//   - project a record of a partition it does not own, or one naming a recipient of another
//     shard than its partition (that user's owner would never see the dirty marker);
//   - advance a checkpoint past a record whose recipients are not all written, skip a record, or
//     start from a position it cannot justify (a recreated topic, another cluster, another
//     partition count, an offset outside the log): it stops and says why;
//   - compute unread as latest − read (conversation_seq has holes and a user's own messages
//     advance it too) or count the user's own messages, CONTROL messages or recalled/deleted ones;
//   - show a user anything of a group outside its intervals: no record before its join, in a gap
//     or after its leave counts, heads a row or raises latest_conversation_seq, and a group row of
//     a user who was never a member is not served at all (counted: it must never happen);
//   - return a partial page: a missing or corrupt history record, a corrupt interval, or a failed
//     snapshot refresh, fails the whole request;
//   - move a read watermark backwards, or write history (the writer owns it);
//   - log message bodies, keys or tokens.
//
// Phase-one limits: shards are placed on instances statically, by configuration (ADR-0026:
// instance i of n owns contract.ShardCount.InstanceShards(i, n), and gateways route each user
// by contract.ShardCount.UserShard); moving shards takes a restart of the instances involved,
// during which misrouted requests are refused and retried; a MARK_READ is not pushed to the
// user's other devices as SESSION_DELTA (they see it on their next PULL_SESSION_LIST); a group
// row's head is searched among the headScan newest records below the user's upper bound only, so
// a member just added again after a long gap may see no head until new traffic arrives.
package session
