-- lease_claim_fixed: lease one explicit writer_id (QIM_WRITER_ID, StatefulSet ordinals).
--
-- KEYS[1]  qim:writer-lease:<region>:<id>
-- ARGV[1]  owner   random hex value identifying this lease holder
-- ARGV[2]  ttl_ms  >= 1
--
-- Returns 1 when the id is (now) ours, 0 when another owner holds it. Idempotent: a retry by the
-- same owner refreshes the TTL and returns 1.

local owner = ARGV[1]
local ttl = tonumber(ARGV[2])
if owner == nil or owner == '' then
  return redis.error_reply('ERR identity lease_claim_fixed: empty owner')
end
if ttl == nil or ttl ~= math.floor(ttl) or ttl < 1 then
  return redis.error_reply('ERR identity lease_claim_fixed: bad ttl_ms')
end

local v = redis.call('GET', KEYS[1])
if v == owner then
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
if v ~= false then
  return 0
end
redis.call('SET', KEYS[1], owner, 'PX', ttl)
return 1
