--! keys: commit seq pending owner
--! argv: identity message_id conversation_id record now_ms hrec_prefix hidx_prefix bucket_width max_record_bytes
--! reply: kind st mid seq rec rat cat cid idn
-- reserve.lua: the two-step path's first step, RESERVED only (state R, no history write), so a
-- process can be killed with a RESERVED commit on record ("after-reserve" failpoint).
-- Names as reserve_and_record.lua; the reply is the same with st = 'R'. Fresh: the commit hash
-- (st R), INCR of the counter, the owner key, the recovery index entry (prelude.lua, reserve).
-- Existing key, same identity: whatever of those writes an earlier call did not make is made
-- (finish), and the stored commit is returned in its state; different identity: kind 'X'.
-- The history slot of the next seq is checked too, so a seq that record.lua could never write
-- is refused here, before anything is written.
return reserve(false, ARITY, K_commit, K_seq, K_pending, K_owner, A_identity, A_message_id, A_conversation_id, A_record,
  A_now_ms, A_hrec_prefix, A_hidx_prefix, A_bucket_width, A_max_record_bytes)
