-- apply.lua: project one dispatch record and advance its partition's checkpoint, atomically.
--
-- KEYS[1]        the checkpoint hash of the topic (binding fields + one field per partition)
-- KEYS[2..n+1]   the session-list zsets of the record's recipients
-- KEYS[n+2]      the sender's read-watermark hash, present only when the sender is a recipient
-- ARGV[1] topic id the caller is bound to (32 hex digits)
-- ARGV[2] checkpoint field of the partition ("p:<partition>")
-- ARGV[3] checkpoint value the caller left ("" = none yet)
-- ARGV[4] new checkpoint value: the record's offset + 1 (the next record to project)
-- ARGV[5] score: time_ms of the record's message_id (48 bits, exact)
-- ARGV[6] member: the 16-byte conversation id
-- ARGV[7] n, the number of list keys (>= 1)
-- ARGV[8] conversation_seq of the message when KEYS[n+2] is present, else ""
--
-- Every recipient is written and the checkpoint moves in the same script, so the checkpoint can
-- never pass a record with a recipient missing. ZADD GT keeps the largest activity whatever order
-- records arrive in; the read watermark only grows. A retry after the checkpoint already moved
-- to ARGV[4] writes nothing and returns 0 (the original outcome); any other checkpoint value is
-- QIMFENCED. Returns 1 when applied.
local n = posint(ARGV[7])
local withRead = ARGV[8] ~= ''
if not n or #KEYS ~= n + 1 + (withRead and 1 or 0) then
  return fail('QIMINVAL', 'key count does not match the recipient count')
end
if not posint(ARGV[4]) or not posint(ARGV[5]) or #ARGV[6] ~= 16 or #ARGV[1] ~= 32 then
  return fail('QIMINVAL', 'bad checkpoint, score, member or topic id')
end
if ARGV[3] ~= '' and not natint(ARGV[3]) then
  return fail('QIMINVAL', 'bad expected checkpoint')
end
local seq = nil
if withRead then
  seq = posint(ARGV[8])
  if not seq then return fail('QIMINVAL', 'bad conversation_seq') end
end
local ck = KEYS[1]
local bound = redis.call('HGET', ck, 'topic_id')
if bound ~= ARGV[1] then
  return fail('QIMBIND', 'checkpoint bound to topic id ' .. tostring(bound))
end
local cur = redis.call('HGET', ck, ARGV[2]) or ''
if cur == ARGV[4] then return 0 end
if cur ~= ARGV[3] then
  return fail('QIMFENCED', 'checkpoint is ' .. (cur == '' and 'absent' or cur) .. ', expected ' ..
    (ARGV[3] == '' and 'absent' or ARGV[3]))
end
local readCur = nil
if withRead then
  local r = redis.call('HGET', KEYS[n + 2], ARGV[6])
  if r then
    readCur = natint(r)
    if not readCur then return fail('QIMCORRUPT', 'read watermark is not a decimal integer') end
  end
end
for i = 2, n + 1 do
  redis.call('ZADD', KEYS[i], 'GT', ARGV[5], ARGV[6])
end
if withRead and (not readCur or readCur < seq) then
  redis.call('HSET', KEYS[n + 2], ARGV[6], ARGV[8])
end
redis.call('HSET', ck, ARGV[2], ARGV[4])
return 1
