--! keys: mod
--! argv: field value now_ms
--! value: fields
-- moderate.lua: store one operator decision about one room, and drop the timed entries that
-- have ended.
--
-- Keys: mod the room's moderation hash (qim:roommod:<tenant>:<room>). Arguments: field the
-- decision's field ("b:<user>" a ban, "m:<user>" a mute, "slow" the slow-mode interval in ms,
-- "rate" the rate limit in events per second); value its new value ("" deletes the field: an
-- unban, an unmute, slow mode or the rate limit turned off); now_ms the RoomWriter's clock.
--
-- A ban or mute holds the Unix time in ms it ends, "0" for until lifted. Every b:/m: field whose
-- end is at or before now_ms is deleted in the same script, so the hash holds only decisions in
-- force (and Redis deletes the key with its last field). The script compares before it deletes:
-- an entry renewed by a later decision is never dropped by an earlier reading. Answers fields =
-- the number of fields left.
if not ARITY then return fail('QIMINVAL', 'key or argument count does not match the header') end
local now = posint(A_now_ms)
if not now then return fail('QIMINVAL', 'bad now_ms') end
local kind = string.match(A_field, '^([bm]):[1-9]%d*$')
if not kind and A_field ~= 'slow' and A_field ~= 'rate' then
  return fail('QIMINVAL', 'bad field ' .. A_field)
end
if A_value ~= '' and not natint(A_value) then return fail('QIMINVAL', 'bad value') end
local all = redis.call('HGETALL', K_mod)
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if string.match(f, '^[bm]:') then
    local ends = natint(v)
    if not ends then return fail('QIMCORRUPT', 'field ' .. f .. ' is not a decimal end time') end
    if ends > 0 and ends <= now then redis.call('HDEL', K_mod, f) end
  end
end
if A_value == '' or ((A_field == 'slow' or A_field == 'rate') and A_value == '0') then
  redis.call('HDEL', K_mod, A_field)
else
  redis.call('HSET', K_mod, A_field, A_value)
end
return reply{fields = redis.call('HLEN', K_mod)}
