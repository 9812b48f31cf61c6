-- mark_read.lua: move one user's read watermark of one conversation forward.
--
-- KEYS[1] the user's read-watermark hash
-- ARGV[1] member: the 16-byte conversation id
-- ARGV[2] requested watermark (conversation_seq, already clamped to the latest seq by the caller)
--
-- Stores max(stored, requested) and returns the stored value as a decimal string, so a stale or
-- repeated MARK_READ is harmless and its answer is always the absolute watermark. A request of 0
-- on an absent watermark writes nothing.
local want = natint(ARGV[2])
if not want or #ARGV[1] ~= 16 then
  return fail('QIMINVAL', 'bad conversation id or watermark')
end
local r = redis.call('HGET', KEYS[1], ARGV[1])
if r then
  local cur = natint(r)
  if not cur then return fail('QIMCORRUPT', 'read watermark is not a decimal integer') end
  if cur >= want then return r end
elseif want == 0 then
  return '0'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ARGV[2]
