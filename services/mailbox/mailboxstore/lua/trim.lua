--! keys: index
--! argv: prefix cutoff ttl
--! value: mark
-- trim.lua: remove a user's day buckets older than a cutoff day and raise the user's trim mark to
-- the highest mailbox_seq they held, so a device cursor below it gets CURSOR_EXPIRED instead of a
-- silent gap. Used by capacity trims and by tests that simulate retention; expiry by EXPIREAT
-- needs no call (pull.lua notices the missing bucket).
--
-- Keys: the user's day index. Arguments: prefix the day-bucket key prefix (bucket = prefix ‖
-- day); cutoff the cutoff day (buckets of days below it are removed); ttl the index TTL (s) when
-- the index is kept only for its trim mark.
-- Reply: mark, the trim mark (8 B), '' when nothing was ever trimmed. Idempotent: a repeated call
-- finds nothing left to remove and returns the same mark.
local prefix, cutoff, ttl = A_prefix, natint(A_cutoff), posint(A_ttl)
if #prefix == 0 or not cutoff or not ttl then return fail('QIMINVAL', 'want prefix, cutoff day and ttl') end
local flat = redis.call('HGETALL', K_index)
local trim, drop = nil, {}
for i = 1, #flat, 2 do
  local f, v = flat[i], flat[i + 1]
  if #v ~= 8 then return fail('QIMCORRUPT', 'day index value is not an 8-byte mailbox_seq') end
  local day = nil
  if string.sub(f, 1, 1) == 'd' then day = natint(string.sub(f, 2)) end
  if f == 't' then
    if not trim or seq_less(trim, v) then trim = v end
  elseif not day then
    return fail('QIMCORRUPT', 'day index has an unknown field')
  elseif day < cutoff then
    drop[#drop + 1] = f
    if not trim or seq_less(trim, v) then trim = v end
  end
end
if #drop == 0 then return reply{mark = trim or ''} end
-- The mark and its TTL first, the index fields it is computed from last: a call that dies in
-- between leaves the fields for its retry, which then computes the same mark and finishes.
redis.call('HSET', K_index, 't', trim)
if redis.call('TTL', K_index) < ttl then redis.call('EXPIRE', K_index, ttl) end
for _, f in ipairs(drop) do redis.call('DEL', prefix .. string.sub(f, 2)) end
redis.call('HDEL', K_index, unpack(drop))
return reply{mark = trim}
