-- lease_release: delete the lease only if it is ours.
--
-- KEYS[1]  qim:writer-lease:<region>:<id>
-- ARGV[1]  owner
--
-- Returns 1 when deleted, 0 when it was already gone or belongs to another owner (idempotent).

if ARGV[1] == nil or ARGV[1] == '' then
  return redis.error_reply('ERR identity lease_release: empty owner')
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
