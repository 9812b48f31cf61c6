// Package msgstore is the ConversationWriter's MessageStore on Redis: the commit facts of every
// send (the idempotency record that walks RESERVED → RECORDED → COMMITTED), the per-conversation
// conversation_seq counter and the hot tier of conversation history (one record per seq plus a
// per-seq-bucket index).
//
// What it owns:
//   - the commit hash under the idempotency key (tenant, sender, client_message_id), kept for
//     contract.IdempotencyWindow after COMMITTED and shrunk to what an ACK replay needs;
//   - conversation_seq allocation (strictly increasing, holes allowed) and the append of
//     field 4 to the caller's canonical MessageRecord, so the stored bytes are the complete record;
//   - the hot history records and their index, the trim candidates and the per-conversation hot
//     floor, and the paged reads over them merged with the archive tier (PULL_HISTORY, tails);
//   - the per-instance recovery index of unfinished commits (qim:cmtpending);
//   - the startup proof that the instance holding commit facts is durable (appendfsync always).
//
// What it must never do:
//   - produce to the Outbox or decide when a SEND_ACK may be sent (the writer owns OUTBOXED and
//     the ACK; this package only stores the states around it);
//   - consume a conversation_seq for an invalid request: every script validates all arguments
//     before its first write;
//   - return a partial history page: a missing or undecodable record fails the whole page;
//   - hash a Lua script per call, build keys with fmt in a loop, or log keys, tokens or bodies;
//   - decide what may be trimmed: TrimHot deletes below the caller's cutoff, and the writer's
//     trimmer owns the rule that keeps unarchived history (ADR-0022); retention is the archive's.
//
// Storage layout (tag = contract.ConversationCommitBucket(tenant, conv).KeyTag(), ids as 32
// lowercase hex digits, numbers in decimal):
//
//	qim:cmt:{tag}:<tenant>:<sender>:<cmid>   hash  st idn mid seq cid rec rat (COMMITTED: st idn mid seq cid cat)
//	qim:cmtshrunk:{tag}:<tenant>:<sender>:<cmid>  hash  the COMMITTED hash while mark_committed.lua builds it
//	qim:cmidown:<tenant>:<sender>:<cmid>     string the commit key that owns the client_message_id
//	qim:cseq:{tag}:<tenant>:<cid>             string conversation_seq counter (INCR)
//	qim:hidx:{tag}:<tenant>:<cid>:<bucket>    zset  score = seq, member = seq decimal
//	qim:hrec:{tag}:<tenant>:<cid>:<seq>       string complete MessageRecord bytes
//	qim:cmtpending                            zset  score = reserved_at ms, member = commit key
//	qim:htrim:{tag}                           zset  score = committed_at ms, member = <tenant>:<cid>:<seq>
//	qim:hfloor:{tag}:<tenant>:<cid>           string hot floor F: seqs ≤ F are read from the archive
//
// All keys of one conversation share its commit bucket's hash tag. The recovery index is one
// key per instance without a tag, which is fine because commit-fact instances are standalone
// (CheckCommitFactsDurability refuses cluster mode).
package msgstore
