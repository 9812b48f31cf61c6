-- base.lua: helpers every script gets, placed after the prologue generated from the script's
-- header and before its store's prelude (so each script is still one EVALSHA). They were copied
-- into three preludes before; one definition keeps the number rules identical everywhere.
--
-- Lua numbers are doubles: integers are exact below 2^53, so sequences, offsets and times are
-- kept there and travel as decimal strings; natint refuses anything else, so a script never
-- compares a rounded value.

local MAX_EXACT = 9007199254740991 -- 2^53 - 1

-- fail is an error reply whose first word names the class the Go side maps (QIMINVAL, …).
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

-- Strict positive decimal integer below 2^53.
local function posint(s)
  local n = natint(s)
  if n and n > 0 then return n end
  return nil
end

-- dec renders an exact integer as a decimal string (no exponent).
local function dec(n)
  return string.format('%.0f', n)
end
