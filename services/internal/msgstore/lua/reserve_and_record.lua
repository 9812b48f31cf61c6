--! keys: commit seq pending owner
--! argv: identity message_id conversation_id record now_ms hrec_prefix hidx_prefix bucket_width max_record_bytes
--! reply: kind st mid seq rec rat cat cid idn
-- reserve_and_record.lua: the fused hot path, RESERVED and RECORDED in one round trip.
--   commit   the commit hash          seq    the conversation_seq counter
--   pending  the recovery index (qim:cmtpending)
--   owner    the client_message_id owner key (cross-conversation reuse is a conflict)
--   identity 36 B; message_id, conversation_id 16 B each; record the canonical MessageRecord
--   without field 4; hrec_prefix/hidx_prefix the history record and index key prefixes;
--   bucket_width the seq bucket width; max_record_bytes the record bound
-- Reply: the commit (see prelude.lua), kind 'F' fresh, 'E' existing, 'X' identity conflict.
-- Fresh, in this order (prelude.lua, reserve, says why): the commit hash (st R, the complete
-- record), INCR of the counter, the owner key, the recovery index entry, the history record and
-- index, st = D. Existing key, same identity: a RESERVED commit (a reserve that died part-way, or
-- reserve.lua's) is finished to RECORDED, a RECORDED one gets a missing owner key or recovery
-- index entry back, and the stored commit is returned (the caller produces D, replays the ACK for
-- C); different identity: kind 'X'. All arguments and preconditions are checked before the first
-- write, so a refused call writes nothing and consumes no sequence.
return reserve(true, ARITY, K_commit, K_seq, K_pending, K_owner, A_identity, A_message_id, A_conversation_id, A_record,
  A_now_ms, A_hrec_prefix, A_hidx_prefix, A_bucket_width, A_max_record_bytes)
