--! keys: amend
--! argv: target seq flags body expire_at_ms
--! reply: value
-- amend.lua: merges one amendment (recall, edit, delete; ADR-0037) into the conversation's
-- amendment index qim:amend:{tag}:<tenant>:<cid>, a hash target seq → "<edit_seq>:<flags>:<body>".
--   target the amended message's seq; seq the amendment's own seq; flags its bit (1 RECALLED,
--   2 DELETED, 4 EDITED); body the new body of an EDIT (else empty); expire_at_ms when the
--   index may be forgotten (the target's retention end), 0 never (a compliance hold)
-- The merge is idempotent and order-free, so a retry, the recovery loop or two amendments
-- marked out of order all leave the same value: flags are OR-ed, the body is the one of the
-- EDIT with the highest seq (edit_seq), and a recalled or deleted message keeps no body at all.
-- The key's expiry only grows: it is set on a new key, raised (GT) on an expiring one and left
-- alone on a persistent one, unless this amendment needs it persistent.
-- Reply: the value now stored.
if not ARITY then return fail('QIMINVAL', 'want 5 arguments') end
local target, seq, flags, exp = posint(A_target), posint(A_seq), natint(A_flags), natint(A_expire_at_ms)
if not target or not seq or not flags or not exp then
  return fail('QIMINVAL', 'target, seq, flags and expire_at_ms must be decimal integers')
end
if seq <= target then return fail('QIMINVAL', 'an amendment must come after its target') end
local eseq, held, body = 0, 0, ''
local cur = redis.call('HGET', K_amend, A_target)
if cur then
  local a, b, rest = string.match(cur, '^(%d+):(%d+):(.*)$')
  eseq, held = natint(a or ''), natint(b or '')
  if not eseq or not held then return fail('QIMCORRUPT', 'amendment index value is not edit_seq:flags:body') end
  body = rest
end
held = bit.bor(held, flags)
if bit.band(flags, 4) ~= 0 and seq > eseq then
  eseq, body = seq, A_body
end
if bit.band(held, 3) ~= 0 then body = '' end
local existed = redis.call('EXISTS', K_amend)
local value = dec(eseq) .. ':' .. dec(held) .. ':' .. body
redis.call('HSET', K_amend, A_target, value)
if exp == 0 then
  redis.call('PERSIST', K_amend)
elseif existed == 0 then
  redis.call('PEXPIREAT', K_amend, dec(exp))
else
  redis.call('PEXPIREAT', K_amend, dec(exp), 'GT')
end
return reply{value = value}
