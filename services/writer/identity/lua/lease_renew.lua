--! keys: lease
--! argv: owner ttl_ms
--! value: renewed
-- lease_renew: extend the lease only while it is still ours.
--
-- lease   qim:writer-lease:<region>:<id>
-- owner   the holder's owner value
-- ttl_ms  >= 1
--
-- Answers renewed = 1 when renewed, 0 when the key is gone or holds another owner (the lease is
-- lost and is never re-taken here: a gap means another process may have used the id meanwhile).

local ttl = tonumber(A_ttl_ms)
if A_owner == nil or A_owner == '' or ttl == nil or ttl ~= math.floor(ttl) or ttl < 1 then
  return redis.error_reply('ERR identity lease_renew: bad owner or ttl_ms')
end
if redis.call('GET', K_lease) == A_owner then
  redis.call('PEXPIRE', K_lease, ttl)
  return reply{renewed = 1}
end
return reply{renewed = 0}
