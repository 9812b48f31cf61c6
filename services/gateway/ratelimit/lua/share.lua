--! keys: bucket...
--! argv: gateway now_ms ttl_ms used...
--! reply: others...
-- share.lua: tell the other gateways what this one admitted into shared rate-limit buckets, and
-- learn what they admitted.
--
-- Keys: bucket... one hash per shared bucket (qim:rlim:<tenant> for a tenant's,
-- qim:rlim:<tenant>:<user> for a sender's). Arguments: gateway this gateway's instance id (a
-- field name); now_ms its clock; ttl_ms how long a silent gateway's count is kept; used... for
-- each bucket, the SENDs this gateway has admitted into it since it started (cumulative).
--
-- Each field is one gateway's cumulative count and when it last said it, "<count>:<ms>". The
-- script writes this gateway's field, drops the fields of gateways silent for ttl_ms (stopped or
-- restarted under a new id), and answers others = the sum of the fields left besides this
-- gateway's. Absolute counts make a repeated call (a retry after a lost reply, a NOSCRIPT
-- re-send) a no-op; the caller turns the growth of others between two calls into tokens taken
-- from its local bucket. The key expires ttl_ms after the last gateway spoke of it.
if not ARITY then return fail('QIMINVAL', 'key or argument count does not match the header') end
local now, ttl = posint(A_now_ms), posint(A_ttl_ms)
if not now or not ttl then return fail('QIMINVAL', 'bad now_ms or ttl_ms') end
if #K_bucket ~= #A_used then return fail('QIMINVAL', 'one count per bucket') end
local others = {}
for i, key in ipairs(K_bucket) do
  local used = natint(A_used[i])
  if not used then return fail('QIMINVAL', 'bad count for ' .. key) end
  redis.call('HSET', key, A_gateway, dec(used) .. ':' .. dec(now))
  local all = redis.call('HGETALL', key)
  local sum = 0
  for j = 1, #all, 2 do
    if all[j] ~= A_gateway then
      local c, at = string.match(all[j + 1], '^(%d+):(%d+)$')
      c, at = natint(c), natint(at)
      if not c or not at then return fail('QIMCORRUPT', key .. ' field ' .. all[j] .. ' is not <count>:<ms>') end
      if now - at > ttl then redis.call('HDEL', key, all[j]) else sum = sum + c end
    end
  end
  redis.call('PEXPIRE', key, ttl)
  others[i] = sum
end
return reply{others = others}
