--! keys: epoch watermark identity [bucket index]...
--! argv: epoch offset prev_offset digest seq day bucket_expire_at index_expire_at identity_ttl settled members...
--! reply: seq duplicate kind
-- materialize.lua: apply ONE qim.dispatch record (a GroupDispatch) to its MailboxShard.
--
-- Keys: the shard epoch, the shard watermark, the dispatch identity, then per entry i (1..n) the
-- recipient's day bucket and day index.
-- Arguments: epoch the shard epoch (decimal); offset this record's log offset (decimal);
--   prev_offset the offset the watermark must hold now ('' = the shard has no watermark yet);
--   digest the payload_digest (32 B); seq = compose(epoch, offset) (8 B big-endian); day
--   created_at_ms / 86 400 000 (decimal); bucket_expire_at and index_expire_at (unix s);
--   identity_ttl (s); settled '1' when the caller's clock puts bucket_expire_at more than
--   contract.MailboxExpiryMargin ahead, else '0'; members[i] entry i: mailbox_seq (8 B) ‖ event_type (4 B BE) ‖
--   MailboxEntry bytes
-- Reply: seq the canonical mailbox_seq (8 B), duplicate 0/1, kind 'F' fresh (entries written),
--   'D' duplicate of an earlier record (nothing but the watermark written), 'R' retry of a record
--   this watermark already covers (nothing written).
--
-- Order of checks, all before the first write: arguments; the shard epoch equals the caller's
-- (else QIMFENCED); a watermark at or past this offset means a retry, answered from the identity;
-- otherwise the watermark must equal the caller's expected previous offset (CAS, else QIMFENCED:
-- another owner moved it); the identity decides fresh / duplicate / QIMCONFLICT. Entries, indexes,
-- identity and watermark are written by this one script, so the watermark never passes a record
-- whose entries are not all stored.
--
-- Expiries (issue 41: two of a record's ten commands per entry were expiry bookkeeping): the
-- first entry of a day its recipient's index does not list yet sets the bucket's expiry, adds
-- the day to the index and raises the index's expiry. A day listed by an earlier record therefore
-- has both expiries (a script that died between those writes is retried before any later record
-- of the shard, the watermark CAS sees to that, and its retry finds the day listed with its own
-- seq, which counts as not listed), and nothing lowers them (pull.lua and trim.lua only raise
-- the index's; trim.lua removes a day's field with its bucket). An entry of a listed day skips
-- both, unless the bucket is near its expiry (settled '0'): a bucket that expired while its day
-- stayed listed must not come back without an expiry.
local n = #A_members
if not ARITY or n < 1 or #K_bucket ~= n then
  return fail('QIMINVAL', 'want n >= 1 entries with 3+2n keys and 10+n arguments')
end
local epoch, offset = natint(A_epoch), natint(A_offset)
if not epoch or epoch < 1 or epoch > MAX_EPOCH then return fail('QIMINVAL', 'epoch not in [1, 32767]') end
if not offset or offset > MAX_OFFSET then return fail('QIMINVAL', 'offset not in [0, 2^48)') end
local prev = A_prev_offset
if prev ~= '' then
  local p = natint(prev)
  if not p or p >= offset then return fail('QIMINVAL', 'expected previous offset must be below the offset') end
end
local digest, seq = A_digest, A_seq
if #digest ~= 32 then return fail('QIMINVAL', 'payload_digest must be 32 bytes') end
if #seq ~= 8 or seq ~= seq_pack(epoch, offset) then
  return fail('QIMINVAL', 'mailbox_seq is not compose(epoch, offset)')
end
local day, bexp, iexp, ttl = natint(A_day), posint(A_bucket_expire_at), posint(A_index_expire_at), posint(A_identity_ttl)
if not day or not bexp or not iexp or not ttl then
  return fail('QIMINVAL', 'day, expiries and ttl must be decimal integers')
end
if A_settled ~= '0' and A_settled ~= '1' then return fail('QIMINVAL', 'settled must be 0 or 1') end
for i, m in ipairs(A_members) do
  if #m < 13 or string.sub(m, 1, 8) ~= seq then
    return fail('QIMINVAL', 'entry member ' .. dec(i) .. ' does not start with the mailbox_seq')
  end
end

-- One MGET for the three (they share the shard's hash tag): two commands fewer per record.
local got = redis.call('MGET', K_epoch, K_watermark, K_identity)
local stored, wm, ident = got[1], got[2], got[3]
if stored ~= A_epoch then
  return fail('QIMFENCED', 'shard epoch is ' .. (stored or 'absent') .. ', caller holds ' .. A_epoch)
end
if ident and #ident ~= 40 then return fail('QIMCORRUPT', 'dispatch identity is not digest+seq') end
local function conflict()
  return fail('QIMCONFLICT', 'dispatch_id already materialized with another payload_digest at ' ..
    seq_text(string.sub(ident, 33, 40)) .. ' (epoch:offset)')
end
local function answer(kind)
  local canon = string.sub(ident, 33, 40)
  local dup = 0
  if canon ~= seq then dup = 1 end
  return reply{seq = canon, duplicate = dup, kind = kind}
end

if wm then
  local w = natint(wm)
  if not w then return fail('QIMCORRUPT', 'watermark is not a decimal offset') end
  if w >= offset then
    if not ident then
      return fail('QIMCORRUPT', 'watermark ' .. wm .. ' covers offset ' .. A_offset .. ' but its dispatch identity is missing')
    end
    if string.sub(ident, 1, 32) ~= digest then return conflict() end
    return answer('R')
  end
end
if (prev == '' and wm) or (prev ~= '' and wm ~= prev) then
  return fail('QIMFENCED', 'watermark is ' .. (wm or 'absent') .. ', caller expected ' .. (prev ~= '' and prev or 'absent'))
end
if ident then
  if string.sub(ident, 1, 32) ~= digest then return conflict() end
  redis.call('SET', K_watermark, A_offset)
  return answer('D')
end

-- Read and check every index entry before the first write (a damaged index must not leave half a record).
local field = 'd' .. A_day
local raise, listed = {}, {}
for i = 1, n do
  local cur = redis.call('HGET', K_index[i], field)
  if cur and #cur ~= 8 then return fail('QIMCORRUPT', 'day index entry is not an 8-byte mailbox_seq') end
  raise[i] = (not cur) or seq_less(cur, seq)
  listed[i] = cur and cur ~= seq
end
for i = 1, n do
  local bkey, ikey = K_bucket[i], K_index[i]
  redis.call('ZADD', bkey, 0, A_members[i])
  if not listed[i] or A_settled == '0' then redis.call('EXPIREAT', bkey, bexp) end
  if raise[i] then redis.call('HSET', ikey, field, seq) end
  if not listed[i] and redis.call('EXPIRETIME', ikey) < iexp then redis.call('EXPIREAT', ikey, iexp) end
end
redis.call('SET', K_identity, digest .. seq, 'EX', ttl)
redis.call('SET', K_watermark, A_offset)
return reply{seq = seq, duplicate = 0, kind = 'F'}
