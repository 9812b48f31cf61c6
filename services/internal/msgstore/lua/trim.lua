--! keys: htrim
--! argv: cutoff_ms limit hrec_prefix hidx_prefix hfloor_prefix bucket_width
--! reply: trimmed more
-- trim.lua: the hot-tier trim of one commit bucket (ADR-0022).
--   htrim the bucket's trim candidates (score committed_at_ms, member <tenant>:<cid>:<seq>,
--   added by mark_committed.lua); cutoff_ms the caller's bound (it owns the archive-watermark
--   rule); limit candidates per call; the three prefixes end in '{tag}:'.
-- For each candidate with committed_at ≤ cutoff, oldest first: raise the conversation's hot floor
-- F to max(F, seq), delete the record and its index member, drop the candidate. The floor moves
-- in the same script as the delete, so no reader ever sees a record gone while F still claims
-- Redis holds it. Everything is validated before the first write.
-- Retry: a repeated call finds the trimmed candidates gone and trims the next ones; the floor only
-- rises and the deletes are no-ops when repeated, so a call that died half way (it cannot: a
-- script is atomic) or a retried pipeline leaves the same state.
-- Reply: trimmed (count) and more '1' when the call stopped at limit.
if not ARITY then return fail('QIMINVAL', 'want 6 arguments') end
local limit, width = posint(A.limit), posint(A.bucket_width)
if not natint(A.cutoff_ms) or not limit or not width then
  return fail('QIMINVAL', 'cutoff_ms, limit and bucket_width must be integers (limit, width > 0)')
end
local members = redis.call('ZRANGE', K.htrim, '-inf', A.cutoff_ms, 'BYSCORE', 'LIMIT', 0, limit)
local todo = {}
for i, m in ipairs(members) do
  local conv, s = string.match(m, '^([0-9a-f]+:[0-9a-f]+):([0-9]+)$')
  local seq = posint(s)
  if not conv or not seq then return fail('QIMCORRUPT', 'trim candidate is not <tenant>:<cid>:<seq>') end
  local fk = A.hfloor_prefix .. conv
  local f = redis.call('GET', fk)
  local floor = 0
  if f then
    floor = natint(f)
    if not floor then return fail('QIMCORRUPT', 'hot floor is not a decimal integer') end
  end
  todo[i] = {conv = conv, s = s, seq = seq, fk = fk, floor = floor}
end
local raised = {}
for _, t in ipairs(todo) do
  local floor = raised[t.fk] or t.floor
  if t.seq > floor then
    redis.call('SET', t.fk, t.s)
    raised[t.fk] = t.seq
  end
  redis.call('DEL', A.hrec_prefix .. t.conv .. ':' .. t.s)
  redis.call('ZREM', A.hidx_prefix .. t.conv .. ':' .. dec(math.floor(t.seq / width)), t.s)
end
if #members > 0 then redis.call('ZREM', K.htrim, unpack(members)) end
local more = '0'
if #members == limit then more = '1' end
return reply{trimmed = #members, more = more}
