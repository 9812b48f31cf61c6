--! keys: checkpoint read lists...
--! argv: topic_id field prev next score member seq
--! value: applied
-- apply.lua: project one dispatch record and advance its partition's checkpoint, atomically.
--
-- Keys: checkpoint the checkpoint hash of the topic (binding fields + one field per partition);
--   read the sender's read-watermark hash, touched only when seq is given (without seq the
--   caller names the checkpoint again: every key a script is handed is a real key of this
--   instance); lists the session-list zsets of the record's recipients (at least one).
-- Arguments: topic_id the topic id the caller is bound to (32 hex digits); field the partition's
--   checkpoint field ("p:<partition>"); prev the checkpoint value the caller left ("" = none
--   yet); next the new checkpoint value, the record's offset + 1 (the next record to project);
--   score the time_ms of the record's message_id (48 bits, exact); member the 16-byte
--   conversation id; seq the conversation_seq of the message when the sender is a recipient,
--   else "".
--
-- Every recipient is written and the checkpoint moves in the same script, so the checkpoint can
-- never pass a record with a recipient missing. ZADD GT keeps the largest activity whatever order
-- records arrive in; the read watermark only grows. A retry after the checkpoint already moved
-- to next writes nothing and answers 0 (the original outcome); any other checkpoint value is
-- QIMFENCED. Answers applied = 1 when applied.
local n = #K_lists
local withRead = A_seq ~= ''
if not ARITY or n < 1 then
  return fail('QIMINVAL', 'key count does not match the recipient count')
end
if not posint(A_next) or not posint(A_score) or #A_member ~= 16 or #A_topic_id ~= 32 then
  return fail('QIMINVAL', 'bad checkpoint, score, member or topic id')
end
if A_prev ~= '' and not natint(A_prev) then
  return fail('QIMINVAL', 'bad expected checkpoint')
end
local seq = nil
if withRead then
  seq = posint(A_seq)
  if not seq then return fail('QIMINVAL', 'bad conversation_seq') end
end
local ck = K_checkpoint
local bound = redis.call('HGET', ck, 'topic_id')
if bound ~= A_topic_id then
  return fail('QIMBIND', 'checkpoint bound to topic id ' .. tostring(bound))
end
local cur = redis.call('HGET', ck, A_field) or ''
if cur == A_next then return reply{applied = 0} end
if cur ~= A_prev then
  return fail('QIMFENCED', 'checkpoint is ' .. (cur == '' and 'absent' or cur) .. ', expected ' ..
    (A_prev == '' and 'absent' or A_prev))
end
local readCur = nil
if withRead then
  local r = redis.call('HGET', K_read, A_member)
  if r then
    readCur = natint(r)
    if not readCur then return fail('QIMCORRUPT', 'read watermark is not a decimal integer') end
  end
end
for i = 1, n do
  redis.call('ZADD', K_lists[i], 'GT', A_score, A_member)
end
if withRead and (not readCur or readCur < seq) then
  redis.call('HSET', K_read, A_member, A_seq)
end
redis.call('HSET', ck, A_field, A_next)
return reply{applied = 1}
