// Package commitlog owns Q-IM's Kafka-protocol logs (franz-go): the Outbox producer the writer
// publishes committed messages with, the dispatch producer the FanoutCoordinator publishes one
// GroupDispatch per target MailboxShard with, the static-assignment PartitionConsumer that fanout,
// mailbox and session read those logs with, the explicit-offset rules a consumer starts from, and
// the group-offset store fanout checkpoints its Outbox position in without joining a group.
//
// What it guarantees: the Outbox producer writes with acks=all and idempotence to the single
// Outbox partition, keyed by the 16-byte message_id; a dispatch batch reports success only when
// every record of it is durably acknowledged; a consumer never starts from a position it cannot
// justify (ValidateStart) and never silently resets (an out-of-range offset is an error, not a
// jump); readiness (Ready) asks a broker through the producer's own client whether the topic, its
// fixed partition count and every partition leader are there and whether the idempotent producer
// id is loaded — a lazily created client that never spoke to a broker is not ready.
//
// What it must never do: claim exactly-once. Idempotence only covers franz-go's own protocol
// retries inside one producer session. "Published but the caller's state mark failed", a cancelled
// in-flight record that the caller re-produces, and a replayed fanout batch all produce duplicate
// log records; that is allowed, and logical uniqueness is the job of the stable message_id key,
// the deterministic dispatch_id and MailboxStore's dispatch_id + payload_digest convergence.
// Also never: join a consumer group or auto-commit (positions are explicit and owned by the
// caller), produce a probe record to test a topic, drop a record without calling its callback
// with an error, or log keys or values.
package commitlog
