--! keys: sum users
--! argv: target user key remove max_keys max_per_user expire_at_ms
--! reply: changed value mine
-- react.lua: adds or removes one user's reaction on one message (ADR-0038). Two hashes per
-- conversation, in the conversation's hash tag:
--   sum   qim:react:{tag}:<tenant>:<cid>     target seq → the message's counts, "key\31count"
--         entries joined by "\30", in first-use order
--   users qim:reactusr:{tag}:<tenant>:<cid>  "<seq>:<user>" → the user's keys on it, joined by "\30"
-- so a history page reads the counts and the reader's own keys of all its messages with two
-- HMGETs. Keys never hold bytes below 0x20 (the writer refuses them), so the separators are safe.
--   target the message's seq; user the reactor; key the reaction; remove 1 to remove, 0 to add;
--   max_keys the distinct keys a message may hold; max_per_user the keys one user may hold on
--   it; expire_at_ms when both hashes may be forgotten (the target's retention end), 0 never
-- Idempotent: adding a held key or removing one not held changes nothing (changed 0), so a retry
-- is harmless. A limit is an error (QIMLIMIT) and changes nothing.
-- Reply: changed 1/0, value the counts now stored for target ('' none), mine the user's keys.
if not ARITY then return fail('QIMINVAL', 'want 7 arguments') end
local target, user, rm = posint(A_target), posint(A_user), natint(A_remove)
local maxk, maxu, exp = posint(A_max_keys), posint(A_max_per_user), natint(A_expire_at_ms)
if not target or not user or not rm or not maxk or not maxu or not exp or A_key == '' then
  return fail('QIMINVAL', 'target, user, max_keys, max_per_user must be positive, remove and expire_at_ms decimal, key set')
end
local function split(s)
  local out = {}
  if s == '' then return out end
  for part in string.gmatch(s, '[^\30]+') do out[#out + 1] = part end
  return out
end
local ufield = A_target .. ':' .. A_user
local mine = split(redis.call('HGET', K_users, ufield) or '')
local held = 0
for i, k in ipairs(mine) do if k == A_key then held = i end end
local sumv = redis.call('HGET', K_sum, A_target) or ''
if (rm == 0 and held > 0) or (rm == 1 and held == 0) then
  return reply{changed = '0', value = sumv, mine = table.concat(mine, '\30')}
end
local keys, counts, at = {}, {}, 0
for _, e in ipairs(split(sumv)) do
  local k, n = string.match(e, '^(.+)\31(%d+)$')
  if not k then return fail('QIMCORRUPT', 'reaction counts are not key\\31count entries') end
  keys[#keys + 1], counts[#counts + 1] = k, tonumber(n)
  if k == A_key then at = #keys end
end
if rm == 0 then
  if #mine >= maxu then return fail('QIMLIMIT', 'the user holds the most reactions one message allows') end
  if at == 0 and #keys >= maxk then return fail('QIMLIMIT', 'the message holds the most distinct reactions allowed') end
  mine[#mine + 1] = A_key
  if at == 0 then
    keys[#keys + 1], counts[#counts + 1] = A_key, 1
  else
    counts[at] = counts[at] + 1
  end
else
  table.remove(mine, held)
  if at == 0 then return fail('QIMCORRUPT', 'a held reaction has no count') end
  counts[at] = counts[at] - 1
end
local entries = {}
for i, k in ipairs(keys) do
  if counts[i] > 0 then entries[#entries + 1] = k .. '\31' .. dec(counts[i]) end
end
local value, minev = table.concat(entries, '\30'), table.concat(mine, '\30')
local existed = {redis.call('EXISTS', K_sum), redis.call('EXISTS', K_users)}
if value == '' then redis.call('HDEL', K_sum, A_target) else redis.call('HSET', K_sum, A_target, value) end
if minev == '' then redis.call('HDEL', K_users, ufield) else redis.call('HSET', K_users, ufield, minev) end
-- Expiry as amend.lua's: set on a new hash, only raised (GT) on an expiring one, a persistent
-- one (a compliance hold) left alone, unless this message needs it persistent.
for i, key in ipairs({K_sum, K_users}) do
  if exp == 0 then
    redis.call('PERSIST', key)
  elseif existed[i] == 0 then
    redis.call('PEXPIREAT', key, dec(exp))
  else
    redis.call('PEXPIREAT', key, dec(exp), 'GT')
  end
end
return reply{changed = '1', value = value, mine = minev}
