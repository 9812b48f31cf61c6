--! keys: htrim
--! argv: cutoff_ms limit hrec_prefix hidx_prefix hfloor_prefix bucket_width
--! reply: trimmed held more
-- trim.lua: the hot-tier trim of one commit bucket (ADR-0022).
--   htrim the bucket's trim candidates (score committed_at_ms, member <tenant>:<cid>:<seq>,
--   added by mark_committed.lua); cutoff_ms the caller's bound (it owns the archive-watermark
--   rule); limit candidates per call; the three prefixes end in '{tag}:'.
-- For each candidate with committed_at ≤ cutoff, oldest first: raise the conversation's hot floor
-- F to max(F, seq), delete the record and its index member, drop the candidate. The floor moves
-- in the same script as the delete, so no reader ever sees a record gone while F still claims
-- Redis holds it. Everything is validated before the first write.
-- Held: F never rises over a seq still in the hot index. Such a seq reached COMMITTED after the
-- candidate did (a recovery finishing a stuck commit), so the archive watermark in the cutoff
-- says nothing about it; reads of seq ≤ F go to the archive only and would miss it. A lower seq
-- whose own candidate is due is trimmed first, in seq order; one that is not due (or has no
-- candidate: not committed yet) holds the candidate until a later call.
-- Retry: a repeated call finds the trimmed candidates gone and trims the next ones; the floor only
-- rises and the deletes are no-ops when repeated, so a call that died half way (it cannot: a
-- script is atomic) or a retried pipeline leaves the same state.
-- Reply: trimmed (records removed), held (candidates kept) and more '1' when the call stopped
-- at limit.
if not ARITY then return fail('QIMINVAL', 'want 6 arguments') end
local limit, width = posint(A_limit), posint(A_bucket_width)
if not natint(A_cutoff_ms) or not limit or not width then
  return fail('QIMINVAL', 'cutoff_ms, limit and bucket_width must be integers (limit, width > 0)')
end
local members = redis.call('ZRANGE', K_htrim, '-inf', A_cutoff_ms, 'BYSCORE', 'LIMIT', 0, limit)
local todo = {}
for i, m in ipairs(members) do
  local conv, s = string.match(m, '^([0-9a-f]+:[0-9a-f]+):([0-9]+)$')
  local seq = posint(s)
  if not conv or not seq then return fail('QIMCORRUPT', 'trim candidate is not <tenant>:<cid>:<seq>') end
  local fk = A_hfloor_prefix .. conv
  local f = redis.call('GET', fk)
  local floor = 0
  if f then
    floor = natint(f)
    if not floor then return fail('QIMCORRUPT', 'hot floor is not a decimal integer') end
  end
  todo[i] = {conv = conv, s = s, seq = seq, fk = fk, floor = floor}
end
local cutoff = natint(A_cutoff_ms)
local raised, gone, trimmed, held = {}, {}, 0, 0
-- drop trims one position of conv: F rises to it when above, its record, index member and
-- candidate go.
local function drop(conv, fk, s, seq)
  if seq > (raised[fk] or 0) then
    redis.call('SET', fk, s)
    raised[fk] = seq
  end
  redis.call('DEL', A_hrec_prefix .. conv .. ':' .. s)
  redis.call('ZREM', A_hidx_prefix .. conv .. ':' .. dec(math.floor(seq / width)), s)
  redis.call('ZREM', K_htrim, conv .. ':' .. s)
  gone[conv .. ':' .. s] = true
  trimmed = trimmed + 1
end
-- clear_lower trims, in seq order, the hot seqs in (F, seq) whose own candidates are due (a
-- lower seq committed later than this candidate sorts after it), and reports whether one that
-- is not due (or not committed) is left, which holds the candidate. At most LOWER_SCAN per call.
local LOWER_SCAN = 64
local function clear_lower(conv, fk, seq)
  local floor = raised[fk]
  if seq - 1 <= floor then return false end
  for b = math.floor((floor + 1) / width), math.floor((seq - 1) / width) do
    local lows = redis.call('ZRANGE', A_hidx_prefix .. conv .. ':' .. dec(b), '(' .. dec(floor), '(' .. dec(seq),
      'BYSCORE', 'LIMIT', 0, LOWER_SCAN)
    for _, s in ipairs(lows) do
      local sc = redis.call('ZSCORE', K_htrim, conv .. ':' .. s)
      local low = natint(s)
      if not low or not sc or tonumber(sc) > cutoff then return true end
      drop(conv, fk, s, low)
    end
    if #lows == LOWER_SCAN then return true end
  end
  return false
end
for _, t in ipairs(todo) do
  raised[t.fk] = raised[t.fk] or t.floor
  if not gone[t.conv .. ':' .. t.s] then
    if t.seq > raised[t.fk] and clear_lower(t.conv, t.fk, t.seq) then
      held = held + 1
    else
      drop(t.conv, t.fk, t.s, t.seq)
    end
  end
end
local more = '0'
if #members == limit then more = '1' end
return reply{trimmed = trimmed, held = held, more = more}
