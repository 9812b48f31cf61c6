-- materialize.lua: apply ONE qim.dispatch record (a GroupDispatch) to its MailboxShard.
--
-- KEYS: 1 shard epoch, 2 shard watermark, 3 dispatch identity,
--       then per entry i (1..n): 2+2i day bucket of the recipient, 3+2i the recipient's day index
-- ARGV: 1 shard epoch (decimal), 2 this record's log offset (decimal),
--       3 offset the watermark must hold now ('' = the shard has no watermark yet),
--       4 payload_digest (32 B), 5 mailbox_seq = compose(epoch, offset) (8 B big-endian),
--       6 day (created_at_ms / 86 400 000, decimal), 7 bucket EXPIREAT (unix s),
--       8 index EXPIREAT (unix s), 9 identity TTL (s),
--       9+i member of entry i: mailbox_seq (8 B) ‖ event_type (4 B BE) ‖ MailboxEntry bytes
-- Reply: {canonical mailbox_seq (8 B), duplicate 0/1, kind}
--   kind 'F' fresh (entries written), 'D' duplicate of an earlier record (nothing but the watermark
--   written), 'R' retry of a record this watermark already covers (nothing written).
--
-- Order of checks, all before the first write: arguments; the shard epoch equals the caller's
-- (else QIMFENCED); a watermark at or past this offset means a retry, answered from the identity;
-- otherwise the watermark must equal the caller's expected previous offset (CAS, else QIMFENCED:
-- another owner moved it); the identity decides fresh / duplicate / QIMCONFLICT. Entries, indexes,
-- identity and watermark are written by this one script, so the watermark never passes a record
-- whose entries are not all stored.
local n = #ARGV - 9
if n < 1 or #KEYS ~= 3 + 2 * n then
  return fail('QIMINVAL', 'want n >= 1 entries with 3+2n keys and 9+n arguments')
end
local epoch, offset = natint(ARGV[1]), natint(ARGV[2])
if not epoch or epoch < 1 or epoch > MAX_EPOCH then return fail('QIMINVAL', 'epoch not in [1, 32767]') end
if not offset or offset > MAX_OFFSET then return fail('QIMINVAL', 'offset not in [0, 2^48)') end
local prev = ARGV[3]
if prev ~= '' then
  local p = natint(prev)
  if not p or p >= offset then return fail('QIMINVAL', 'expected previous offset must be below the offset') end
end
local digest, seq = ARGV[4], ARGV[5]
if #digest ~= 32 then return fail('QIMINVAL', 'payload_digest must be 32 bytes') end
if #seq ~= 8 or seq ~= seq_pack(epoch, offset) then
  return fail('QIMINVAL', 'mailbox_seq is not compose(epoch, offset)')
end
local day, bexp, iexp, ttl = natint(ARGV[6]), posint(ARGV[7]), posint(ARGV[8]), posint(ARGV[9])
if not day or not bexp or not iexp or not ttl then
  return fail('QIMINVAL', 'day, expiries and ttl must be decimal integers')
end
for i = 10, #ARGV do
  local m = ARGV[i]
  if #m < 13 or string.sub(m, 1, 8) ~= seq then
    return fail('QIMINVAL', 'entry member ' .. dec(i - 9) .. ' does not start with the mailbox_seq')
  end
end

local stored = redis.call('GET', KEYS[1])
if stored ~= ARGV[1] then
  return fail('QIMFENCED', 'shard epoch is ' .. (stored or 'absent') .. ', caller holds ' .. ARGV[1])
end
local wm = redis.call('GET', KEYS[2])
local ident = redis.call('GET', KEYS[3])
if ident and #ident ~= 40 then return fail('QIMCORRUPT', 'dispatch identity is not digest+seq') end
local function conflict()
  return fail('QIMCONFLICT', 'dispatch_id already materialized with another payload_digest at ' ..
    seq_text(string.sub(ident, 33, 40)) .. ' (epoch:offset)')
end
local function answer(kind)
  local canon = string.sub(ident, 33, 40)
  local dup = 0
  if canon ~= seq then dup = 1 end
  return {canon, dup, kind}
end

if wm then
  local w = natint(wm)
  if not w then return fail('QIMCORRUPT', 'watermark is not a decimal offset') end
  if w >= offset then
    if not ident then
      return fail('QIMCORRUPT', 'watermark ' .. wm .. ' covers offset ' .. ARGV[2] .. ' but its dispatch identity is missing')
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
  redis.call('SET', KEYS[2], ARGV[2])
  return answer('D')
end

-- Read and check every index entry before the first write (a damaged index must not leave half a record).
local field = 'd' .. ARGV[6]
local raise = {}
for i = 1, n do
  local cur = redis.call('HGET', KEYS[3 + 2 * i], field)
  if cur and #cur ~= 8 then return fail('QIMCORRUPT', 'day index entry is not an 8-byte mailbox_seq') end
  raise[i] = (not cur) or seq_less(cur, seq)
end
for i = 1, n do
  local bkey, ikey = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  redis.call('ZADD', bkey, 0, ARGV[9 + i])
  redis.call('EXPIREAT', bkey, bexp)
  if raise[i] then redis.call('HSET', ikey, field, seq) end
  if redis.call('EXPIRETIME', ikey) < iexp then redis.call('EXPIREAT', ikey, iexp) end
end
redis.call('SET', KEYS[3], digest .. seq, 'EX', ttl)
redis.call('SET', KEYS[2], ARGV[2])
return {seq, 0, 'F'}
