--! keys: lease
--! argv: owner
--! value: released
-- lease_release: delete the lease only if it is ours.
--
-- lease  qim:writer-lease:<region>:<id>
-- owner  the holder's owner value
--
-- Answers released = 1 when deleted, 0 when it was already gone or belongs to another owner
-- (idempotent).

if A_owner == nil or A_owner == '' then
  return redis.error_reply('ERR identity lease_release: empty owner')
end
if redis.call('GET', K_lease) == A_owner then
  redis.call('DEL', K_lease)
  return reply{released = 1}
end
return reply{released = 0}
