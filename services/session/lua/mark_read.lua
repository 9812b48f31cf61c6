--! keys: read
--! argv: member seq
--! value: watermark
-- mark_read.lua: move one user's read watermark of one conversation forward.
--
-- Keys: read the user's read-watermark hash. Arguments: member the 16-byte conversation id;
-- seq the requested watermark (conversation_seq, already clamped to the latest seq by the caller).
--
-- Stores max(stored, requested) and answers the stored value as a decimal string, so a stale or
-- repeated MARK_READ is harmless and its answer is always the absolute watermark. A request of 0
-- on an absent watermark writes nothing.
local want = natint(A_seq)
if not want or #A_member ~= 16 then
  return fail('QIMINVAL', 'bad conversation id or watermark')
end
local r = redis.call('HGET', K_read, A_member)
if r then
  local cur = natint(r)
  if not cur then return fail('QIMCORRUPT', 'read watermark is not a decimal integer') end
  if cur >= want then return reply{watermark = r} end
elseif want == 0 then
  return reply{watermark = '0'}
end
redis.call('HSET', K_read, A_member, A_seq)
return reply{watermark = A_seq}
