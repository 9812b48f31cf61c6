--! keys: hlc
--! argv: now_ms window_ms floor_ms claim_id
--! reply: start finish
-- claim_window: claim the next HLC window of one (region_id, writer_id).
--
-- hlc        qim:hlc:<region>:<writer>   hash, no TTL, never deleted:
--              hw     exclusive end (Unix ms) of the highest window ever claimed (the high-water mark)
--              claim  id of the claim that set hw (idempotent retry)
--              start  start of that window
-- now_ms     the writer's wall clock, >= 1
-- window_ms  window length, >= 1
-- floor_ms   the writer's own installed horizon, >= 0 (a window never starts below it, even if
--            the key was lost)
-- claim_id   unique per claim attempt of one Issuer; a retry reuses it
--
-- Answers start = max(now_ms, hw + 1, floor_ms) and finish = start + window_ms, and sets
-- hw := finish. A retry with the claim_id that set hw answers that same window instead of burning
-- another one. The core Redis runs appendfsync always, so the reply implies the new hw is on disk.

local LIMIT = 281474976710656 -- 2^48: time_ms is a 48-bit field of message_id

local function int_arg(s, min)
  local v = tonumber(s)
  if v == nil or v ~= math.floor(v) or v < min or v >= LIMIT then
    return nil
  end
  return v
end

local now = int_arg(A_now_ms, 1)
local window = int_arg(A_window_ms, 1)
local floor = int_arg(A_floor_ms, 0)
local claim = A_claim_id
if now == nil or window == nil or floor == nil then
  return redis.error_reply('ERR identity claim_window: bad now_ms, window_ms or floor_ms')
end
if claim == nil or claim == '' then
  return redis.error_reply('ERR identity claim_window: empty claim_id')
end

local cur = redis.call('HMGET', K_hlc, 'hw', 'claim', 'start')
local hw = 0
if cur[1] then
  hw = tonumber(cur[1])
  if hw == nil then
    return redis.error_reply('ERR identity claim_window: corrupt high-water mark')
  end
end
if cur[2] == claim then
  local start = tonumber(cur[3])
  if start == nil then
    return redis.error_reply('ERR identity claim_window: corrupt claim start')
  end
  return reply{start = start, finish = hw}
end

local start = math.max(now, hw + 1, floor)
local finish = start + window
if finish >= LIMIT then
  return redis.error_reply('ERR identity claim_window: window beyond the 48-bit time field')
end
redis.call('HSET', K_hlc, 'hw', string.format('%d', finish), 'claim', claim,
  'start', string.format('%d', start))
return reply{start = start, finish = finish}
