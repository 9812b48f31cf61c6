// Package writer is the ConversationWriter: it turns an authenticated client SEND into a durable
// commit and answers SEND_ACK only from a COMMITTED result.
//
// It owns the commit state machine RESERVED → RECORDED → OUTBOXED → COMMITTED: one fused Redis
// script reserves the conversation_seq, stores the intent with the complete canonical
// MessageRecord and writes the hot history record (RECORDED); the CommittedEnvelope is produced to
// the qim.outbox log with acks=all (OUTBOXED); a second script marks the commit COMMITTED and gives
// the idempotency key its absolute 2 h expiry. A retry of the same request, or the recovery loop
// after a crash, resumes the first intent from the stored record and never re-plans it from a new
// client payload.
//
// It must never: send an ACK for a commit that is not COMMITTED; issue a message_id outside a
// persisted HLC window or without holding its writer_id lease; start on a Redis that does not
// fsync every write (commit facts would roll back on a host crash and reuse sequences); hide a
// queue (every stage is bounded and its depth is a metric).
package writer
