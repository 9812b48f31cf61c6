-- prelude.lua: helpers shared by the session scripts. luascript prepends this file to every
-- script, after the prologue it generates from the script's --! header, before the SHA is computed
-- (once per process), so each script is still one EVALSHA.
--
-- Numbers (offsets, conversation_seq, time_ms) travel as decimal strings and are exact as Lua
-- numbers below 2^53; natint refuses anything else, so a script never compares a rounded value.
--
-- Errors are error replies whose first word names the class (mapped to Go errors in store.go):
--   QIMINVAL bad argument (nothing written), QIMBIND the checkpoint is bound to another topic,
--   QIMFENCED the checkpoint moved under the caller, QIMCORRUPT stored state is damaged.

local MAX_EXACT = 9007199254740991 -- 2^53 - 1

local function fail(class, msg)
  return redis.error_reply(class .. ' ' .. msg)
end

-- Strict non-negative decimal integer below 2^53: '0' or no leading zero; rejects '', '-1', '1e3'.
local function natint(s)
  if type(s) ~= 'string' or #s == 0 or #s > 16 then return nil end
  if s ~= '0' and not string.match(s, '^[1-9]%d*$') then return nil end
  local n = tonumber(s)
  if n > MAX_EXACT then return nil end
  return n
end

local function posint(s)
  local n = natint(s)
  if n and n > 0 then return n end
  return nil
end
