// Package fanout is the FanoutCoordinator: it turns every committed message in the qim.outbox log
// into one GroupDispatch per target MailboxShard on qim.dispatch (partition = mailbox shard), and
// checkpoints its Outbox position only after all of them are durable.
//
// It owns the Outbox position of its group (stored with Kafka's offset commit API, no group
// membership), the start rule applied to it (a committed position inside [low, high]; none only
// from a log that still starts at 0), and the batch cycle: poll, plan deterministically with
// dispatch.Plan, produce every dispatch, wait for every acks=all acknowledgement; the position
// (last+1 of the newest acknowledged batch) is committed after every batch, or at most once per
// CommitInterval when one is set. A crash anywhere replays the uncommitted batches byte for
// byte; the MailboxNode converges the duplicates by dispatch_id + payload_digest.
//
// It must never: move the position before every dispatch below it is acknowledged; skip an
// Outbox record it cannot decode or plan (a skipped record is a lost committed message — it stops
// and names the offset); re-decide an audience (the envelope's frozen audience is the only input);
// use Kafka transactions or consumer-group rebalancing; start from a position the log cannot
// justify; log message bodies, keys or tokens.
package fanout
