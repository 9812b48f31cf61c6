--! keys: commit seq pending owner grp grpmem
--! argv: identity message_id conversation_id record now_ms hrec_prefix hidx_prefix bucket_width max_record_bytes op expect max_members owner name crq users...
--! reply: kind st mid seq rec rat cat cid idn
-- group_change.lua: one membership change as a CONTROL message that takes the next seq J.
--   op      1 CREATE, 2 ADD, 3 REMOVE, 4 LEAVE
--   expect  the membership version the caller planned at (0 for CREATE)
--   max_members  the cap on current members (contract.GroupMaxMembers)
--   owner, name, crq  CREATE only: the owner, display name and identity of the creating request
--   users   the users the change applies to, decimal; the caller keeps only real changes
--           (ADD: not current members, REMOVE/LEAVE: current members)
-- Fresh: refuse unless the group is at version expect (QIMVERSION, the caller re-plans) or, for
-- CREATE, absent (QIMEXISTS); check every user and the cap (QIMFULL); then, in this order, the
-- commit as reserve_and_record writes it (record + field 17 = expect + 1), the intervals
-- (ADD: a new open interval J−1, CREATE: 0; REMOVE/LEAVE: the open one closes at J), and last the
-- meta in ONE HSET (v = expect + 1, n, and for CREATE owner, name, crq). Retry (same identity):
-- the stored commit is finished and, while the meta still says expect (or is absent for CREATE),
-- the interval writes are redone from the stored seq — each one is skipped when already there —
-- and then the meta, so a change that died part-way converges to the same keyspace. n is
-- computed from the meta it replaces plus the op's users (all of them were validated as
-- changes), never from what a partial run already wrote.
local OPS = {[1] = 'CREATE', [2] = 'ADD', [3] = 'REMOVE', [4] = 'LEAVE'}
local bad = check_intent(ARITY, A_identity, A_message_id, A_conversation_id, A_record, A_now_ms,
  A_hrec_prefix, A_hidx_prefix, A_bucket_width, A_max_record_bytes)
if bad then return bad end
local op, expect, cap = posint(A_op), natint(A_expect), posint(A_max_members)
if not op or not OPS[op] or not expect or not cap then return fail('QIMINVAL', 'bad op, expect or max_members') end
if #A_users == 0 then return fail('QIMINVAL', 'no users') end
local adds = op == 1 or op == 2

local function open(iv) return iv and string.sub(iv, -1) == ':' end

-- apply writes the intervals and the meta for a change whose CONTROL message has seq j.
local function apply(j, n)
  local from = dec(j - 1)
  if op == 1 then from = '0' end
  for i = 1, #A_users do
    local u = A_users[i]
    local iv = redis.call('HGET', K_grpmem, u)
    if adds then
      if not open(iv) then
        local add = from .. ':'
        if iv then add = iv .. ',' .. add end
        redis.call('HSET', K_grpmem, u, add)
      end
    elseif open(iv) then
      redis.call('HSET', K_grpmem, u, iv .. dec(j))
    end
  end
  local nn = n + #A_users
  if not adds then nn = n - #A_users end
  if op == 1 then
    redis.call('HSET', K_grp, 'v', dec(expect + 1), 'n', dec(nn), 'owner', A_owner, 'name', A_name, 'crq', A_crq)
  else
    redis.call('HSET', K_grp, 'v', dec(expect + 1), 'n', dec(nn))
  end
end

local meta = redis.call('HMGET', K_grp, 'v', 'n')
local n = natint(meta[2] or '0')
if not n then return fail('QIMCORRUPT', 'group member count is not an integer') end
local h = load_commit(K_commit)
if h[1] then
  if h[8] ~= A_identity or h[7] ~= A_conversation_id then return commit_reply('X', h) end
  local r = finish(h, true, K_commit, K_seq, K_pending, K_owner, A_hrec_prefix, A_hidx_prefix, A_bucket_width)
  if r.err then return r end
  if (op == 1 and not meta[1]) or (meta[1] and natint(meta[1]) == expect) then apply(posint(h[3]), n) end
  return r
end
if op == 1 then
  if meta[1] then return fail('QIMEXISTS', 'group exists') end
elseif not meta[1] then
  return fail('QIMNOGROUP', 'no such group')
elseif natint(meta[1]) ~= expect then
  return fail('QIMVERSION', 'membership version is ' .. meta[1])
end
for i = 1, #A_users do
  local u = A_users[i]
  -- user ids are u64, beyond Lua's exact integers: checked and used as decimal strings only
  if #u > 20 or not string.match(u, '^[1-9]%d*$') then return fail('QIMINVAL', 'user ids must be positive decimals') end
  if open(redis.call('HGET', K_grpmem, u)) == adds then
    return fail('QIMCORRUPT', 'user ' .. u .. ' is not a change at this version')
  end
end
if adds and n + #A_users > cap then return fail('QIMFULL', 'group would exceed ' .. dec(cap) .. ' members') end
local r = reserve_fresh(true, version_field(expect + 1), K_commit, K_seq, K_pending, K_owner, A_identity, A_message_id,
  A_conversation_id, A_record, A_now_ms, A_hrec_prefix, A_hidx_prefix, A_bucket_width)
if r.err then return r end
apply(posint(r[4]), n)
return r
