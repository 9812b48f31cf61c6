--! keys: epoch watermark index cursor
--! argv: cursor lower limit max_bytes prefix store ttl window
--! reply: status next has_more members...
-- pull.lua: the entries of one user after a device cursor, up to the shard watermark, in whole
-- event groups; records the device cursor (forward only).
--
-- Keys: the shard epoch, the shard watermark, the user's day index, the device cursor.
-- Arguments: cursor (8 B big-endian; '' = the zero cursor); lower the ZRANGEBYLEX lower bound
--   ('-' for the zero cursor, else '[' ‖ be8(cursor + 1)); limit (entries); max_bytes; prefix
--   the day-bucket key prefix (bucket = prefix ‖ day); store the cursor ('1') or not ('0'); ttl
--   (s) of the cursor and of an index this script creates or refreshes; window the fetch window
--   per bucket (limit + contract.EventGroupMaxEntries)
-- Reply: status, next, has_more, then the members.
--   status 'OK': members (mailbox_seq ‖ event_type ‖ MailboxEntry) ascending by mailbox_seq, whole
--   event groups only; next = mailbox_seq of the last group ('' when none).
--   status 'EXP': the cursor is behind what this user's mailbox still holds; next = the cursor to
--   resume from after the client's REBUILD; no members.
--
-- The zero cursor reads from '-' (minus infinity): an exclusive bound at zero once hid log offset
-- 0, the first record of every dispatch partition. Day buckets expire on their own (EXPIREAT); a
-- day listed in the index whose bucket is gone was trimmed, and its highest seq raises the user's
-- trim mark 't'. A non-zero cursor below 't' is expired. A non-zero cursor with no index at all
-- (everything expired, index included) is expired too and 't' is set to the shard head, so the
-- resumed cursor is accepted next time instead of looping through REBUILD.
local cursor, lower, prefix = A_cursor, A_lower, A_prefix
local limit, maxb, ttl, window = posint(A_limit), posint(A_max_bytes), posint(A_ttl), posint(A_window)
if cursor ~= '' and #cursor ~= 8 then return fail('QIMINVAL', 'cursor must be 8 bytes or empty') end
if not ((cursor == '' and lower == '-') or (cursor ~= '' and #lower == 9 and string.sub(lower, 1, 1) == '[')) then
  return fail('QIMINVAL', 'lower bound does not match the cursor')
end
if not limit or not maxb or not ttl or not window or window < limit then
  return fail('QIMINVAL', 'limit, max bytes, ttl and window must be positive (window >= limit)')
end
if #prefix == 0 or (A_store ~= '0' and A_store ~= '1') then return fail('QIMINVAL', 'bad prefix or store flag') end

local EW = redis.call('MGET', K_epoch, K_watermark) -- one command: they share the shard's hash tag
local E, W = EW[1], EW[2]
local head = nil
if E and W then
  local e, w = natint(E), natint(W)
  if not e or e < 1 or e > MAX_EPOCH or not w or w > MAX_OFFSET then
    return fail('QIMCORRUPT', 'shard epoch or watermark is not a valid number')
  end
  head = seq_pack(e, w)
end

-- Validate the index and find trimmed days before any write.
local flat = redis.call('HGETALL', K_index)
local trim, days, gone = nil, {}, {}
for i = 1, #flat, 2 do
  local f, v = flat[i], flat[i + 1]
  if #v ~= 8 then return fail('QIMCORRUPT', 'day index value is not an 8-byte mailbox_seq') end
  if f == 't' then
    if not trim or seq_less(trim, v) then trim = v end
  elseif string.sub(f, 1, 1) == 'd' and natint(string.sub(f, 2)) then
    local day = string.sub(f, 2)
    if redis.call('EXISTS', prefix .. day) == 1 then
      days[#days + 1] = day
    else
      gone[#gone + 1] = f
      if not trim or seq_less(trim, v) then trim = v end
    end
  else
    return fail('QIMCORRUPT', 'day index has an unknown field')
  end
end

local function store_cursor()
  if A_store ~= '1' or cursor == '' then return end
  local cur = redis.call('GET', K_cursor)
  if cur and #cur == 8 and not seq_less(cur, cursor) then
    redis.call('EXPIRE', K_cursor, ttl) -- the stored cursor is ahead: never move it back
  else
    redis.call('SET', K_cursor, cursor, 'EX', ttl)
  end
end

if #flat == 0 then
  if cursor == '' then return reply{status = 'OK', next = '', has_more = 0, members = {}} end
  local nxt = cursor
  if head and seq_less(cursor, head) then nxt = head end
  redis.call('HSET', K_index, 't', nxt)
  redis.call('EXPIRE', K_index, ttl)
  store_cursor()
  return reply{status = 'EXP', next = nxt, has_more = 0, members = {}}
end
if #gone > 0 then
  -- The mark first: the gone fields are what it is computed from, so a call that dies between
  -- the two writes leaves them for its retry instead of a lowered mark (a silent gap).
  redis.call('HSET', K_index, 't', trim)
  redis.call('HDEL', K_index, unpack(gone))
end
if redis.call('TTL', K_index) < ttl then redis.call('EXPIRE', K_index, ttl) end
store_cursor()
if cursor ~= '' and trim and seq_less(cursor, trim) then
  return reply{status = 'EXP', next = trim, has_more = 0, members = {}}
end
if not head or #days == 0 then return reply{status = 'OK', next = '', has_more = 0, members = {}} end

-- One window per live bucket; a full window may hide later entries of its bucket, so nothing at or
-- above its last seq is emitted (an event group never spans buckets: one record, one day).
local upper = '(' .. seq_next(head)
local lists, pos, cut = {}, {}, nil
for i, day in ipairs(days) do
  local l = redis.call('ZRANGEBYLEX', prefix .. day, lower, upper, 'LIMIT', 0, window)
  lists[i], pos[i] = l, 1
  if #l == window then
    local last = string.sub(l[#l], 1, 8)
    if not cut or seq_less(last, cut) then cut = last end
  end
end

local members, last = {}, ''
local count, bytes, more = 0, 0, false
while count < limit do
  local best, bs = nil, nil
  for i = 1, #lists do
    local m = lists[i][pos[i]]
    if m then
      local s = string.sub(m, 1, 8)
      if not bs or seq_less(s, bs) then best, bs = i, s end
    end
  end
  if not best then break end
  if cut and not seq_less(bs, cut) then more = true break end
  local l, p, gb = lists[best], pos[best], 0
  local q = p
  while l[q] and string.sub(l[q], 1, 8) == bs do
    gb = gb + #l[q]
    q = q + 1
  end
  if count > 0 and bytes + gb > maxb then more = true break end
  for j = p, q - 1 do members[#members + 1] = l[j] end
  pos[best] = q
  count, bytes, last = count + (q - p), bytes + gb, bs
end
if not more then
  if cut then more = true end
  for i = 1, #lists do
    if lists[i][pos[i]] then more = true end
  end
end
return reply{status = 'OK', next = last, has_more = more and 1 or 0, members = members}
