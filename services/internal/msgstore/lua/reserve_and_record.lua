-- reserve_and_record.lua: the fused hot path, RESERVED and RECORDED in one round trip.
-- KEYS: 1 commit hash, 2 conversation_seq counter, 3 recovery index (qim:cmtpending)
-- ARGV: 1 identity (36 B), 2 message_id (16 B), 3 conversation_id (16 B),
--       4 canonical MessageRecord without field 4, 5 now_ms, 6 history record key prefix,
--       7 history index key prefix, 8 seq bucket width, 9 max record bytes
-- Existing key: same identity returns the stored commit in whatever state it is (the caller
-- resumes R/D or replays the ACK for C); different identity returns kind 'X'. Fresh: INCR the
-- counter, write history record + index, store the hash in state D, register for recovery.
-- All arguments are validated before the first write, so bad input consumes no sequence.
return reserve_fresh('D', true)
