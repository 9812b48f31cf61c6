--! keys:
--! argv: prefix max_writers owner ttl_ms
--! value: writer_id
-- lease_claim: lease the lowest free writer_id of a region.
--
-- Keys are derived inside the script (prefix .. id) because the free id is not known in advance;
-- this is valid only on a standalone Redis, which the core instance is by contract
-- (docs/architecture.md, invariant 14).
-- prefix       qim:writer-lease:<region>:
-- max_writers  ids are 0 .. max_writers-1, 1 <= max_writers <= 65536
-- owner        random hex value identifying this lease holder
-- ttl_ms       >= 1
--
-- Answers the writer_id, or -1 when all are leased. Idempotent: if an id already holds owner
-- (a retry after a lost reply) that id is returned and its TTL refreshed, so one owner never
-- ends up holding two ids.

local prefix = A_prefix
local maxw = tonumber(A_max_writers)
local owner = A_owner
local ttl = tonumber(A_ttl_ms)
if prefix == nil or prefix == '' or owner == nil or owner == '' then
  return redis.error_reply('ERR identity lease_claim: empty prefix or owner')
end
if maxw == nil or maxw ~= math.floor(maxw) or maxw < 1 or maxw > 65536 then
  return redis.error_reply('ERR identity lease_claim: bad max_writers')
end
if ttl == nil or ttl ~= math.floor(ttl) or ttl < 1 then
  return redis.error_reply('ERR identity lease_claim: bad ttl_ms')
end

-- One MGET per chunk instead of one GET per id: the scan runs once per writer start but blocks
-- the core Redis meanwhile. Chunks keep unpack() far below Lua's stack limit.
local CHUNK = 256
local free = -1
for base = 0, maxw - 1, CHUNK do
  local last = math.min(base + CHUNK, maxw) - 1
  local keys = {}
  for id = base, last do
    keys[#keys + 1] = prefix .. id
  end
  local vals = redis.call('MGET', unpack(keys))
  for i = 1, #keys do
    if vals[i] == owner then
      redis.call('PEXPIRE', keys[i], ttl)
      return reply{writer_id = base + i - 1}
    end
    if vals[i] == false and free < 0 then
      free = base + i - 1
    end
  end
end
if free >= 0 then
  redis.call('SET', prefix .. free, owner, 'NX', 'PX', ttl)
end
return reply{writer_id = free}
