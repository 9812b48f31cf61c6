--! keys: commit seq pending owner
--! argv: identity message_id conversation_id record now_ms hrec_prefix hidx_prefix bucket_width max_record_bytes
--! reply: kind st mid seq rec rat cat cid idn
-- reserve.lua: the two-step path's first step, RESERVED only (state R, no history write), so a
-- process can be killed with a RESERVED commit on record ("after-reserve" failpoint).
-- Names as reserve_and_record.lua; the reply is the same with st = 'R'.
return reserve_fresh('R', false)
