--! keys: pending [commit owner shrunk htrim]...
--! argv: window_ms [committed_at_ms trim_conv]...
--! reply: results...
-- mark_committed.lua: RECORDED → COMMITTED for a batch of commits, after their Outbox produce
-- was acknowledged: one call per batch, not one per commit (issue 41: the writer's two script
-- calls per message were half of redis-core's). Each commit i is marked exactly as one call
-- marked it before, and one commit's error does not stop the others (as separate calls did not).
--   pending the recovery index (qim:cmtpending); per commit: commit the commit hash, owner the
--   client_message_id owner key, shrunk the scratch key the COMMITTED hash is built under;
--   window_ms the idempotency window; htrim the commit bucket's hot-tier trim candidates and
--   trim_conv the conversation's '<tenant>:<cid>' (the candidate is trim_conv:seq, scored by
--   committed_at, so trim.lua finds what to trim oldest first without a key walk)
-- On D: build a hash with only what an ACK replay needs (st idn mid seq cid cat) under shrunk and
-- RENAME it over the commit, then expire the commit at committed_at + window, give the owner the
-- same expiry and leave the recovery index. A new hash rather than HDEL, because a hash never
-- converts back from hashtable to listpack once the record made it large (a committed hash is
-- ~280 B as listpack, ~610 B as the HDEL'd hashtable); RENAME rather than DEL + HSET, because
-- RENAME replaces the commit in one write: a mark that dies before it leaves the RECORDED hash
-- whole (and the recovery index entry that finds it), and its retry or the recovery loop
-- overwrites every field of shrunk and renames it. DEL + HSET lost the hash between the two.
-- On C: returns the original committed_at (idempotent retry) after redoing the expiry, owner
-- and recovery-index writes from it: they follow the RENAME, so a mark that died between them
-- left some undone, and a complete mark is unchanged by the same values. On R: QIMNOTREC.
-- The expiry is absolute from the caller's committed_at: a commit marked with a committed_at
-- older than the window is forgotten at once, exactly as if the window had passed.
-- Reply: results[i], commit i's outcome: 'C:' ‖ the committed_at_ms that holds, or the text of
-- its error ('QIMINVAL …', 'QIMNOTFOUND …', 'QIMNOTREC …', 'QIMCORRUPT …').
if not ARITY or #K_commit < 1 or #K_commit ~= #A_committed_at_ms then
  return fail('QIMINVAL', 'want the recovery index, then 4 keys and 2 arguments per commit')
end
local win = posint(A_window_ms)
if not win then return fail('QIMINVAL', 'window_ms must be a positive integer') end
-- The writes after the RENAME, from the committed_at that holds.
-- The trim candidate is re-added with the same score on a retry (ZADD of an equal member is a
-- no-op); one re-added after its trim only re-trims a deleted record, which is harmless.
local function settle(i, at, seq)
  redis.call('ZADD', K_htrim[i], dec(at), A_trim_conv[i] .. ':' .. seq)
  redis.call('PEXPIREAT', K_commit[i], dec(at + win))
  redis.call('SET', K_owner[i], K_commit[i], 'PXAT', dec(at + win))
  redis.call('ZREM', K_pending, K_commit[i])
end
local function mark(i)
  local cat = posint(A_committed_at_ms[i])
  if not cat then return 'QIMINVAL committed_at_ms must be a positive integer' end
  if not string.match(A_trim_conv[i], '^[0-9a-f]+:[0-9a-f]+$') then return 'QIMINVAL trim_conv must be <tenant>:<cid>' end
  local h = redis.call('HMGET', K_commit[i], 'st', 'idn', 'mid', 'seq', 'cid', 'cat')
  if not h[1] then return 'QIMNOTFOUND no commit under this key' end
  if h[1] == 'C' then
    local held = posint(h[6])
    if not held or not posint(h[4]) then return 'QIMCORRUPT committed commit lacks committed_at or seq' end
    settle(i, held, h[4])
    return 'C:' .. h[6]
  end
  if h[1] == 'R' then return 'QIMNOTREC commit is reserved but not recorded' end
  if h[1] ~= 'D' or not h[2] or not h[3] or not h[4] or not h[5] then
    return 'QIMCORRUPT recorded commit lacks fields'
  end
  -- Only this line writes shrunk keys, always these six fields and never a TTL, so one left by a
  -- mark that died is overwritten whole.
  redis.call('HSET', K_shrunk[i], 'st', 'C', 'idn', h[2], 'mid', h[3], 'seq', h[4], 'cid', h[5], 'cat', A_committed_at_ms[i])
  redis.call('RENAME', K_shrunk[i], K_commit[i])
  settle(i, cat, h[4])
  return 'C:' .. A_committed_at_ms[i]
end
local results = {}
for i = 1, #K_commit do results[i] = mark(i) end
return reply{results = results}
