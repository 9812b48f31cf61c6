-- prelude.lua: helpers shared by the msgstore scripts (luascript's base.lua adds fail, natint,
-- posint and dec). luascript prepends this file to every script, after the prologue it generates
-- from the script's --! header, before the SHA is computed (once per process), so each script is
-- still one EVALSHA. The helpers use the header's names
-- (K.name and A.name, compiled to each script's positions), ARITY and reply; a helper naming what
-- the running script's header lacks fails that script if it is called.
--
-- The commit reply of reserve_and_record, reserve and record (header: kind st mid seq rec rat cat
-- cid idn): kind 'F' fresh (this call created it), 'E' existing, 'X' identity conflict; the rest
-- are the stored hash fields. Absent fields are ''. Numbers are decimal strings.
-- Errors are error replies whose first word names the class (mapped to Go errors):
--   QIMINVAL bad argument, QIMCORRUPT stored state disagrees, QIMNOTREC not recorded yet,
--   QIMNOTFOUND no commit, QIMSEQ sequence space exhausted.

local function is_zero16(s)
  return s == string.rep('\0', 16)
end

-- Protobuf varint of a non-negative integer below 2^53.
local function varint(n)
  local out = {}
  while n >= 128 do
    out[#out + 1] = string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  out[#out + 1] = string.char(n)
  return table.concat(out)
end

-- Field 4 (conversation_seq, wire type 0): tag byte 0x20 then the varint. Appending it makes the
-- caller's record complete, because protobuf keeps the last occurrence of a scalar field.
local function seq_field(seq)
  return '\32' .. varint(seq)
end

-- The commit reply, from HMGET st mid seq rec rat cat cid idn.
local function commit_reply(kind, h)
  return reply{kind = kind, st = h[1], mid = h[2] or '', seq = h[3] or '', rec = h[4] or '',
    rat = h[5] or '', cat = h[6] or '', cid = h[7] or '', idn = h[8] or ''}
end

local COMMIT_FIELDS = {'st', 'mid', 'seq', 'rec', 'rat', 'cat', 'cid', 'idn'}

local function load_commit(key)
  return redis.call('HMGET', key, unpack(COMMIT_FIELDS))
end

-- Writes the history record and its bucket index entry. An existing record with the same bytes
-- is a retry and fine; different bytes mean the seq was reused (for example a counter that went
-- back after data loss) and must never overwrite history.
local function write_history(hrec_prefix, hidx_prefix, width, seq, seqs, full)
  local hkey = hrec_prefix .. seqs
  if not redis.call('SET', hkey, full, 'NX') then
    if redis.call('GET', hkey) ~= full then
      return fail('QIMCORRUPT', 'history record at seq ' .. seqs .. ' differs from the commit record')
    end
  end
  redis.call('ZADD', hidx_prefix .. dec(math.floor(seq / width)), seq, seqs)
  return nil
end

-- Shared argument check of the two reserve scripts (header of reserve_and_record.lua); returns an
-- error reply or nil.
local function check_intent()
  if not ARITY then return fail('QIMINVAL', 'want 9 arguments') end
  if #A.identity ~= 36 then return fail('QIMINVAL', 'identity must be 36 bytes') end
  if #A.message_id ~= 16 or is_zero16(A.message_id) then
    return fail('QIMINVAL', 'message_id must be 16 non-zero bytes')
  end
  if #A.conversation_id ~= 16 or is_zero16(A.conversation_id) then
    return fail('QIMINVAL', 'conversation_id must be 16 non-zero bytes')
  end
  local maxrec = posint(A.max_record_bytes)
  if not maxrec or #A.record == 0 or #A.record > maxrec then
    return fail('QIMINVAL', 'record must be 1..max bytes')
  end
  if not posint(A.now_ms) then return fail('QIMINVAL', 'now_ms must be a positive integer') end
  if not posint(A.bucket_width) then return fail('QIMINVAL', 'bucket width must be a positive integer') end
  if #A.hrec_prefix == 0 or #A.hidx_prefix == 0 then return fail('QIMINVAL', 'empty key prefix') end
  return nil
end

-- Existing commit under the idempotency key: same identity (and conversation) → 'E', anything
-- else → 'X'; nil if none.
local function existing(key, idn, cid)
  local h = load_commit(key)
  if not h[1] then
    for i = 2, #h do -- a hash without its state field is damage, not a fresh key
      if h[i] then return fail('QIMCORRUPT', 'commit hash without state') end
    end
    return nil
  end
  if h[8] ~= idn or h[7] ~= cid then return commit_reply('X', h) end
  return commit_reply('E', h)
end

-- Allocates the next conversation_seq; refuses (without writing) once it would reach 2^53.
local function next_seq(seq_key)
  local cur = redis.call('GET', seq_key)
  if cur and not (cur == '0' or posint(cur)) then
    return nil, fail('QIMCORRUPT', 'sequence counter is not a decimal integer')
  end
  if cur and tonumber(cur) >= MAX_EXACT then
    return nil, fail('QIMSEQ', 'conversation_seq would reach 2^53')
  end
  return redis.call('INCR', seq_key), nil
end

-- Fresh commit: allocate the seq, complete the record, store the hash (state st) and register
-- it in the recovery index. with_history also writes the history record (the fused path).
-- Header of reserve_and_record.lua.
local function reserve_fresh(st, with_history)
  local bad = check_intent()
  if bad then return bad end
  local idn, mid, cid, rec, now = A.identity, A.message_id, A.conversation_id, A.record, A.now_ms
  local ex = existing(K.commit, idn, cid)
  if ex then return ex end
  -- K.owner owns (tenant, sender, client_message_id) across conversations: the commit hash is
  -- tagged by conversation, so without it a cmid reused in another conversation would commit a
  -- second message under one idempotency key.
  local owner = redis.call('GET', K.owner)
  if owner and owner ~= K.commit then
    return redis.error_reply('QIMCONFLICT client_message_id already used in another conversation')
  end
  local seq, err = next_seq(K.seq)
  if err then return err end
  local seqs = dec(seq)
  local full = rec .. seq_field(seq)
  if with_history then
    err = write_history(A.hrec_prefix, A.hidx_prefix, tonumber(A.bucket_width), seq, seqs, full)
    if err then return err end
  end
  redis.call('HSET', K.commit, 'st', st, 'idn', idn, 'mid', mid, 'seq', seqs, 'cid', cid,
    'rec', full, 'rat', now)
  redis.call('ZADD', K.pending, tonumber(now), K.commit)
  redis.call('SET', K.owner, K.commit)
  return reply{kind = 'F', st = st, mid = mid, seq = seqs, rec = full, rat = now, cat = '', cid = cid, idn = idn}
end
