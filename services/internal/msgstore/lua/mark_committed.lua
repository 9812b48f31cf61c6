--! keys: commit pending owner shrunk htrim
--! argv: committed_at_ms window_ms trim_conv
--! reply: st committed_at_ms
-- mark_committed.lua: RECORDED → COMMITTED, after the Outbox produce was acknowledged.
--   commit the commit hash, pending the recovery index (qim:cmtpending), owner the
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
-- Reply: st 'C' and the committed_at_ms that holds.
if not ARITY then return fail('QIMINVAL', 'want 3 arguments') end
local cat, win = posint(A_committed_at_ms), posint(A_window_ms)
if not cat or not win then return fail('QIMINVAL', 'committed_at_ms and window_ms must be positive integers') end
if not string.match(A_trim_conv, '^[0-9a-f]+:[0-9a-f]+$') then return fail('QIMINVAL', 'trim_conv must be <tenant>:<cid>') end
-- The writes after the RENAME, from the committed_at that holds.
-- The trim candidate is re-added with the same score on a retry (ZADD of an equal member is a
-- no-op); one re-added after its trim only re-trims a deleted record, which is harmless.
local function settle(at, seq)
  redis.call('ZADD', K_htrim, dec(at), A_trim_conv .. ':' .. seq)
  redis.call('PEXPIREAT', K_commit, dec(at + win))
  redis.call('SET', K_owner, K_commit, 'PXAT', dec(at + win))
  redis.call('ZREM', K_pending, K_commit)
end
local h = redis.call('HMGET', K_commit, 'st', 'idn', 'mid', 'seq', 'cid', 'cat')
if not h[1] then return fail('QIMNOTFOUND', 'no commit under this key') end
if h[1] == 'C' then
  local held = posint(h[6])
  if not held or not posint(h[4]) then return fail('QIMCORRUPT', 'committed commit lacks committed_at or seq') end
  settle(held, h[4])
  return reply{st = 'C', committed_at_ms = h[6]}
end
if h[1] == 'R' then return fail('QIMNOTREC', 'commit is reserved but not recorded') end
if h[1] ~= 'D' or not h[2] or not h[3] or not h[4] or not h[5] then
  return fail('QIMCORRUPT', 'recorded commit lacks fields')
end
-- Only this line writes shrunk keys, always these six fields and never a TTL, so one left by a
-- mark that died is overwritten whole.
redis.call('HSET', K_shrunk, 'st', 'C', 'idn', h[2], 'mid', h[3], 'seq', h[4], 'cid', h[5], 'cat', A_committed_at_ms)
redis.call('RENAME', K_shrunk, K_commit)
settle(cat, h[4])
return reply{st = 'C', committed_at_ms = A_committed_at_ms}
