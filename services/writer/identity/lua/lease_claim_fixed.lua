--! keys: lease
--! argv: owner ttl_ms
--! value: held
-- lease_claim_fixed: lease one explicit writer_id (QIM_WRITER_ID, StatefulSet ordinals).
--
-- lease   qim:writer-lease:<region>:<id>
-- owner   random hex value identifying this lease holder
-- ttl_ms  >= 1
--
-- Answers held = 1 when the id is (now) ours, 0 when another owner holds it. Idempotent: a retry
-- by the same owner refreshes the TTL and answers 1.

local owner = A_owner
local ttl = tonumber(A_ttl_ms)
if owner == nil or owner == '' then
  return redis.error_reply('ERR identity lease_claim_fixed: empty owner')
end
if ttl == nil or ttl ~= math.floor(ttl) or ttl < 1 then
  return redis.error_reply('ERR identity lease_claim_fixed: bad ttl_ms')
end

local v = redis.call('GET', K_lease)
if v == owner then
  redis.call('PEXPIRE', K_lease, ttl)
  return reply{held = 1}
end
if v ~= false then
  return reply{held = 0}
end
redis.call('SET', K_lease, owner, 'PX', ttl)
return reply{held = 1}
