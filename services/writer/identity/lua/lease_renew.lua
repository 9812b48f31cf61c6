-- lease_renew: extend the lease only while it is still ours.
--
-- KEYS[1]  qim:writer-lease:<region>:<id>
-- ARGV[1]  owner   ARGV[2]  ttl_ms >= 1
--
-- Returns 1 when renewed, 0 when the key is gone or holds another owner (the lease is lost and
-- is never re-taken here: a gap means another process may have used the id meanwhile).

local ttl = tonumber(ARGV[2])
if ARGV[1] == nil or ARGV[1] == '' or ttl == nil or ttl ~= math.floor(ttl) or ttl < 1 then
  return redis.error_reply('ERR identity lease_renew: bad owner or ttl_ms')
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
return 0
