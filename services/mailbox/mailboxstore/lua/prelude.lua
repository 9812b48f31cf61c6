-- prelude.lua: helpers shared by the mailboxstore scripts (luascript's base.lua adds fail, natint,
-- posint and dec). luascript prepends this file to every script, after the prologue it generates
-- from the script's --! header, before the SHA is computed (once per process), so each script is
-- still one EVALSHA.
--
-- Sequences: a contract.MailboxSeq (shard_epoch:16 ‖ log_offset:48) reaches 2^62 and is NOT exact
-- as a Lua number (a double: exact only below 2^53, i.e. for epochs below 32). Scripts therefore
-- carry every mailbox_seq as an 8-byte big-endian string and compare two of them through their
-- (epoch, offset) parts, each exact. Lua's string '<' is never used on them: it goes through
-- strcoll, which depends on the server's locale and stops at NUL bytes.
--
-- Errors are error replies whose first word names the class (mapped to Go errors in errors.go):
--   QIMINVAL bad argument, QIMFENCED epoch or watermark moved under the caller (a second owner),
--   QIMCONFLICT same dispatch_id with another payload_digest, QIMCORRUPT stored state is damaged.

local MAX_OFFSET = 281474976710655 -- 2^48 - 1 (contract.MaxLogOffset)
local MAX_EPOCH = 32767            -- contract.MaxShardEpoch

-- seq_split: 8-byte big-endian mailbox_seq → epoch, offset (both exact).
local function seq_split(s)
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(s, 1, 8)
  return b1 * 256 + b2, ((((b3 * 256 + b4) * 256 + b5) * 256 + b6) * 256 + b7) * 256 + b8
end

-- seq_pack: (epoch, offset) → 8-byte big-endian mailbox_seq.
local function seq_pack(e, o)
  local lo = {}
  for i = 6, 1, -1 do
    lo[i] = o % 256
    o = math.floor(o / 256)
  end
  return string.char(math.floor(e / 256), e % 256, unpack(lo))
end

local function seq_less(a, b)
  local ea, oa = seq_split(a)
  local eb, ob = seq_split(b)
  return ea < eb or (ea == eb and oa < ob)
end

-- seq_next: the smallest mailbox_seq above s (offset 2^48-1 carries into the epoch).
local function seq_next(s)
  local e, o = seq_split(s)
  if o == MAX_OFFSET then return seq_pack(e + 1, 0) end
  return seq_pack(e, o + 1)
end

local function seq_text(s)
  local e, o = seq_split(s)
  return dec(e) .. ':' .. dec(o)
end
