-- mark_committed.lua: RECORDED → COMMITTED, after the Outbox produce was acknowledged.
-- KEYS: 1 commit hash, 2 recovery index (qim:cmtpending), 3 client_message_id owner key
-- ARGV: 1 committed_at_ms, 2 idempotency window ms
-- On D: rebuild the hash with only what an ACK replay needs (st idn mid seq cid cat) — DEL and
-- HSET rather than HDEL, because a hash never converts back from hashtable to listpack once the
-- record made it large — expire it at committed_at + window and leave the recovery index.
-- On C: no-op returning the original committed_at (idempotent retry). On R: QIMNOTREC.
-- The expiry is absolute from the caller's committed_at: a commit marked with a committed_at
-- older than the window is forgotten at once, exactly as if the window had passed.
-- Reply: {'C', committed_at_ms}
if #ARGV ~= 2 then return fail('QIMINVAL', 'want 2 arguments') end
local cat, win = posint(ARGV[1]), posint(ARGV[2])
if not cat or not win then return fail('QIMINVAL', 'committed_at_ms and window_ms must be positive integers') end
local h = redis.call('HMGET', KEYS[1], 'st', 'idn', 'mid', 'seq', 'cid', 'cat')
if not h[1] then return fail('QIMNOTFOUND', 'no commit under this key') end
if h[1] == 'C' then return {'C', h[6] or ''} end
if h[1] == 'R' then return fail('QIMNOTREC', 'commit is reserved but not recorded') end
if h[1] ~= 'D' or not h[2] or not h[3] or not h[4] or not h[5] then
  return fail('QIMCORRUPT', 'recorded commit lacks fields')
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'st', 'C', 'idn', h[2], 'mid', h[3], 'seq', h[4], 'cid', h[5], 'cat', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], dec(cat + win))
redis.call('SET', KEYS[3], KEYS[1], 'PXAT', dec(cat + win))
redis.call('ZREM', KEYS[2], KEYS[1])
return {'C', ARGV[1]}
