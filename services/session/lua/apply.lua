--! keys: checkpoint touched...
--! argv: topic_id [field prev next score member seq read lists]...
--! value: applied
-- apply.lua: project a batch of dispatch records and advance their partitions' checkpoints,
-- atomically: one call per poll instead of one per record (issue 41: the per-record script cost
-- six commands and a round trip per record; the batch pays the checkpoint's read and write once
-- and one ZADD per list key however many records touch it).
--
-- Keys: checkpoint the checkpoint hash of the topic (binding fields + one field per partition);
--   touched... every list and read key the records name, each once (records refer to them by
--   1-based index, so a key several records share is passed and written once).
-- Arguments: topic_id the topic id the caller is bound to (32 hex digits); then per record, in
--   log order within each partition: field the partition's checkpoint field ("p:<partition>");
--   prev the checkpoint value the record expects ("" = none yet); next the record's offset + 1;
--   score the time_ms of the record's message_id (48 bits, exact); member the 16-byte
--   conversation id; seq the conversation_seq when the sender is a recipient, else ""; read the
--   index of the sender's read-watermark key ("" with seq ""); lists the indices of the
--   recipients' session-list keys, space-separated (at least one).
--
-- Invariants, the same as one script per record had: every recipient is written and the
-- checkpoint moves in the same script, so a checkpoint never passes a record with a recipient
-- missing; ZADD GT keeps the largest activity whatever order records arrive in; the read
-- watermark only grows; a checkpoint moves only along the chain prev → next, so a second
-- process projecting the partition is refused (QIMFENCED, nothing written) instead of
-- interleaving. Every check runs before the first write, so a refused batch writes nothing.
-- A repeated call (a re-send after NOSCRIPT, or one that ran before its reply was lost) finds a
-- partition's checkpoint at some record's next: that record and the ones before it of its
-- partition are skipped, as the old per-record script answered "already applied". Errors name the
-- first record they concern as "@<index>" after the class word. Answers how many records applied.
local R = #A_field
if not ARITY or R < 1 then return fail('QIMINVAL', 'want the checkpoint, touched keys and whole records') end
if #A_topic_id ~= 32 then return fail('QIMINVAL', 'topic id must be 32 hex digits') end
local nk = #K_touched

local function index(s)
  local k = posint(s)
  if not k or k > nk then return nil end
  return k
end

-- Arguments, all before the first command.
local lists, reads, seqs, order, known = {}, {}, {}, {}, {}
for i = 1, R do
  local at = '@' .. dec(i) .. ' '
  if not string.match(A_field[i], '^p:%d+$') then return fail('QIMINVAL', at .. 'bad checkpoint field') end
  if not posint(A_next[i]) or not posint(A_score[i]) or #A_member[i] ~= 16 then
    return fail('QIMINVAL', at .. 'bad checkpoint, score or member')
  end
  if A_prev[i] ~= '' and not natint(A_prev[i]) then return fail('QIMINVAL', at .. 'bad expected checkpoint') end
  if A_seq[i] ~= '' then
    seqs[i], reads[i] = posint(A_seq[i]), index(A_read[i])
    if not seqs[i] or not reads[i] then return fail('QIMINVAL', at .. 'bad conversation_seq or read key') end
  elseif A_read[i] ~= '' then
    return fail('QIMINVAL', at .. 'read key without conversation_seq')
  end
  local ks = {}
  for s in string.gmatch(A_lists[i], '%S+') do
    local k = index(s)
    if not k then return fail('QIMINVAL', at .. 'bad list key index') end
    ks[#ks + 1] = k
  end
  if #ks == 0 then return fail('QIMINVAL', at .. 'no recipient') end
  lists[i] = ks
  if not known[A_field[i]] then
    known[A_field[i]] = true
    order[#order + 1] = A_field[i]
  end
end

-- The binding and every partition's checkpoint in one read.
local got = redis.call('HMGET', K_checkpoint, 'topic_id', unpack(order))
if got[1] ~= A_topic_id then
  return fail('QIMBIND', 'checkpoint bound to topic id ' .. tostring(got[1]))
end
local cur, want, stop = {}, {}, {}
for j, f in ipairs(order) do
  cur[f] = got[j + 1] or ''
  want[f] = cur[f]
end
for i = 1, R do -- the last record a repeated call already applied, per partition
  if A_next[i] == cur[A_field[i]] then stop[A_field[i]] = i end
end
local apply, applied = {}, 0
for i = 1, R do
  local f = A_field[i]
  if not (stop[f] and i <= stop[f]) then
    if A_prev[i] ~= want[f] then
      return fail('QIMFENCED', '@' .. dec(i) .. ' checkpoint ' .. f .. ' is ' ..
        (cur[f] == '' and 'absent' or cur[f]) .. ', expected ' .. (A_prev[i] == '' and 'absent' or A_prev[i]))
    end
    apply[i], want[f], applied = true, A_next[i], applied + 1
  end
end
if applied == 0 then return reply{applied = 0} end

-- Read watermarks: the largest seq per (key, member), raised only where it grows.
local raise = {}
for i = 1, R do
  if apply[i] and reads[i] then
    local byMember = raise[reads[i]] or {}
    raise[reads[i]] = byMember
    local m = A_member[i]
    if not byMember[m] or byMember[m] < seqs[i] then byMember[m] = seqs[i] end
  end
end
local sets = {}
for k, byMember in pairs(raise) do -- every read before the first write
  local ms = {}
  for m in pairs(byMember) do ms[#ms + 1] = m end
  local held = redis.call('HMGET', K_touched[k], unpack(ms))
  local set = {}
  for j, m in ipairs(ms) do
    local h = held[j] and natint(held[j])
    if held[j] and not h then return fail('QIMCORRUPT', 'read watermark is not a decimal integer') end
    if not h or h < byMember[m] then
      set[#set + 1] = m
      set[#set + 1] = dec(byMember[m])
    end
  end
  if #set > 0 then sets[k] = set end
end
for k, set in pairs(sets) do redis.call('HSET', K_touched[k], unpack(set)) end

-- Session lists: one ZADD GT per key with the largest activity of each conversation.
local best = {}
for i = 1, R do
  if apply[i] then
    local score = posint(A_score[i])
    for _, k in ipairs(lists[i]) do
      local byMember = best[k] or {}
      best[k] = byMember
      local m = A_member[i]
      if not byMember[m] or byMember[m] < score then byMember[m] = score end
    end
  end
end
for k, byMember in pairs(best) do
  local args = {}
  for m, score in pairs(byMember) do
    args[#args + 1] = dec(score)
    args[#args + 1] = m
  end
  redis.call('ZADD', K_touched[k], 'GT', unpack(args))
end

local moved = {}
for _, f in ipairs(order) do
  if want[f] ~= cur[f] then
    moved[#moved + 1] = f
    moved[#moved + 1] = want[f]
  end
end
redis.call('HSET', K_checkpoint, unpack(moved))
return reply{applied = applied}
