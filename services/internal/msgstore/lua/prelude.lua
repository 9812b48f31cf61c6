-- prelude.lua: helpers shared by the msgstore scripts (luascript's base.lua adds fail, natint,
-- posint and dec). luascript prepends this file to every script, after the prologue it generates
-- from the script's --! header, before the SHA is computed (once per process), so each script is
-- still one EVALSHA. The helpers take the script's keys and arguments as parameters (each
-- script passes its own names): a helper that read the prologue's locals would capture
-- each as an upvalue when the chunk runs, which measured about 2 us more per
-- reserve_and_record call inside Redis (docs/adr/0018-lua-script-interface-header.md).
--
-- The commit reply of reserve_and_record, reserve and record (header: kind st mid seq rec rat cat
-- cid idn): kind 'F' fresh (this call created it), 'E' existing, 'X' identity conflict; the rest
-- are the stored hash fields. Absent fields are ''. Numbers are decimal strings.
-- Errors are error replies whose first word names the class (mapped to Go errors):
--   QIMINVAL bad argument, QIMCORRUPT stored state disagrees, QIMNOTREC not recorded yet,
--   QIMNOTFOUND no commit, QIMSEQ sequence space exhausted, QIMCONFLICT client_message_id owned
--   by a commit in another conversation.

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

-- Field 17 (membership_version, wire type 0): tag 17<<3 = 136, varint 0x88 0x01.
local function version_field(v)
  return '\136\1' .. varint(v)
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

-- Reads the conversation_seq counter (0 when absent).
local function read_counter(seq_key)
  local cur = redis.call('GET', seq_key)
  if not cur then return 0, nil end
  local n = natint(cur)
  if not n then return nil, fail('QIMCORRUPT', 'sequence counter is not a decimal integer') end
  return n, nil
end

-- The next conversation_seq after the counter, without writing; refuses once it would reach 2^53
-- and when its history slot is already taken (nothing above the counter may be recorded: a
-- record there means the counter went back, for example after data loss).
local function next_seq(seq_key, hrec_prefix)
  local cur, err = read_counter(seq_key)
  if err then return nil, err end
  if cur >= MAX_EXACT then return nil, fail('QIMSEQ', 'conversation_seq would reach 2^53') end
  local seq = cur + 1
  if redis.call('EXISTS', hrec_prefix .. dec(seq)) == 1 then
    return nil, fail('QIMCORRUPT', 'history record at seq ' .. dec(seq) .. ' lies above the sequence counter')
  end
  return seq, nil
end

-- A reserved commit's seq is its own once the counter covers it: the reserve INCRs right after it
-- stores the commit hash, so only a reserve that died between the two leaves the counter one
-- behind, and the INCR is made up here. Further behind means the counter went back.
local function claim_seq(seq_key, seq)
  local cur, err = read_counter(seq_key)
  if err then return err end
  if cur >= seq then return nil end
  if cur ~= seq - 1 then return fail('QIMCORRUPT', 'sequence counter is behind a reserved commit') end
  redis.call('INCR', seq_key)
  return nil
end

-- Moves a reserved commit to the next free seq: another send took its seq (see record_reserved).
-- The stored record ends with field 4 of the old seq; it gets the new one instead. Updates h.
local function reseq(commit_key, seq_key, hrec_prefix, h)
  local tail = seq_field(posint(h[3]))
  if #h[4] <= #tail or string.sub(h[4], -#tail) ~= tail then
    return fail('QIMCORRUPT', 'reserved record does not end with its conversation_seq')
  end
  local seq, err = next_seq(seq_key, hrec_prefix)
  if err then return err end
  local seqs, full = dec(seq), string.sub(h[4], 1, #h[4] - #tail) .. seq_field(seq)
  redis.call('HSET', commit_key, 'seq', seqs, 'rec', full)
  redis.call('INCR', seq_key)
  h[3], h[4] = seqs, full
  return nil
end

-- RESERVED → RECORDED (header of record.lua or reserve_and_record.lua): claims the commit's seq,
-- writes the history record and its bucket index entry, then st = D. h is the commit (HMGET of
-- COMMIT_FIELDS, st R) and is updated. A history record already there with the commit's bytes is
-- a retry and fine. Different bytes mean the seq is someone else's: a reserve that died before
-- its INCR left the counter behind and another send took the seq (its record is the one there).
-- Nothing published this commit's seq yet (only a RECORDED commit is produced or answered), so it
-- moves to the next free seq rather than overwriting history or failing for good.
local function record_reserved(h, commit, seq_key, hrec, hidx, width)
  local seq = posint(h[3])
  if not seq or not h[4] or #h[4] == 0 then return fail('QIMCORRUPT', 'reserved commit lacks seq or record') end
  local err = claim_seq(seq_key, seq)
  if err then return err end
  local held = redis.call('GET', hrec .. h[3])
  if held and held ~= h[4] then
    err = reseq(commit, seq_key, hrec, h)
    if err then return err end
    held = nil
  end
  if not held then redis.call('SET', hrec .. h[3], h[4]) end
  seq = tonumber(h[3])
  redis.call('ZADD', hidx .. dec(math.floor(seq / tonumber(width))), seq, h[3])
  redis.call('HSET', commit, 'st', 'D')
  h[1] = 'D'
  return nil
end

-- Shared argument check of the commit scripts that reserve (the arguments of
-- reserve_and_record.lua, and whether the counts fit the header); returns an error reply or nil.
local function check_intent(arity, idn, mid, cid, rec, now, hrec, hidx, width, max_rec)
  if not arity then return fail('QIMINVAL', 'want 9 arguments') end
  if #idn ~= 36 then return fail('QIMINVAL', 'identity must be 36 bytes') end
  if #mid ~= 16 or is_zero16(mid) then
    return fail('QIMINVAL', 'message_id must be 16 non-zero bytes')
  end
  if #cid ~= 16 or is_zero16(cid) then
    return fail('QIMINVAL', 'conversation_id must be 16 non-zero bytes')
  end
  local maxrec = posint(max_rec)
  if not maxrec or #rec == 0 or #rec > maxrec then
    return fail('QIMINVAL', 'record must be 1..max bytes')
  end
  if not posint(now) then return fail('QIMINVAL', 'now_ms must be a positive integer') end
  if not posint(width) then return fail('QIMINVAL', 'bucket width must be a positive integer') end
  if #hrec == 0 or #hidx == 0 then return fail('QIMINVAL', 'empty key prefix') end
  return nil
end

local function owner_conflict()
  return redis.error_reply('QIMCONFLICT client_message_id already used in another conversation')
end

-- The retry of this very request (same identity and conversation) found its commit (header of
-- reserve_and_record.lua). A reserve writes, in order: the commit hash (st R, the complete record,
-- the seq after the counter), INCR of the counter, the owner key, the recovery index entry, then
-- with_history the history record, its index entry and st = D. A reserve that died after any of
-- them left its commit hash behind; this makes up what is missing, from the stored fields (a
-- retry's own message_id and record are ignored: the first intent stands), so the keyspace ends
-- as a reserve that never died leaves it. Each write is conditional or idempotent, so a complete
-- commit costs reads only. Returns kind 'E' with the commit as it now stands.
local function finish(h, with_history, commit, seq_key, pending, owner_key, hrec, hidx, width)
  if h[1] == 'C' then return commit_reply('E', h) end
  if h[1] ~= 'R' and h[1] ~= 'D' then return fail('QIMCORRUPT', 'unknown commit state') end
  local owner = redis.call('GET', owner_key)
  if owner and owner ~= commit and h[1] == 'R' then
    -- The reserve died before its owner write and another conversation has claimed the
    -- client_message_id since: this commit never got past RESERVED (the owner write precedes
    -- the history and the recovery index), so it is dropped and the request refused like a
    -- fresh one. Its seq, if the INCR ran, stays a hole. (A RECORDED commit is in history, so
    -- it stands; only its owner key is left alone.)
    redis.call('DEL', commit)
    redis.call('ZREM', pending, commit)
    return owner_conflict()
  end
  local rat = posint(h[5])
  if not rat then return fail('QIMCORRUPT', 'unfinished commit lacks reserved_at') end
  if h[1] == 'R' then
    local seq = posint(h[3])
    if not seq then return fail('QIMCORRUPT', 'reserved commit lacks seq') end
    local err = claim_seq(seq_key, seq)
    if err then return err end
  end
  if not owner then redis.call('SET', owner_key, commit) end
  if not redis.call('ZSCORE', pending, commit) then redis.call('ZADD', pending, rat, commit) end
  if with_history and h[1] == 'R' then
    local err = record_reserved(h, commit, seq_key, hrec, hidx, width)
    if err then return err end
  end
  return commit_reply('E', h)
end

-- Reserve (header of reserve_and_record.lua): a fresh commit, or the commit of an earlier call.
-- with_history also records it (the fused path: state D), else it stays RESERVED.
--
-- Every check reads: arguments, the existing commit, the owner, the counter and the history slot
-- of the next seq, so a refused call writes nothing. Then the commit hash comes first, holding the
-- seq after the counter and the complete record: from the first write on, a retry of the same
-- request finds it and finishes it (finish) instead of reserving again — had the INCR come first,
-- a reserve that died right after it would leave a seq nobody knows, and its retry a hole. The
-- counter follows at once; the owner key precedes the recovery index, so every commit the
-- recovery loop can find owns its client_message_id; history and st = D come last, so st = D
-- still means "history written".
--
-- reserve_existing is the first half: the reply for a key that already holds a commit (finished
-- by finish, or 'X'), nil for a fresh key.
local function reserve_existing(with_history, commit, seq_key, pending, owner_key, idn, cid, hrec, hidx, width)
  local h = load_commit(commit)
  if h[1] then
    if h[8] ~= idn or h[7] ~= cid then return commit_reply('X', h) end
    return finish(h, with_history, commit, seq_key, pending, owner_key, hrec, hidx, width)
  end
  for i = 2, #h do -- a hash without its state field is damage, not a fresh key
    if h[i] then return fail('QIMCORRUPT', 'commit hash without state') end
  end
  return nil
end

-- The fresh half of reserve: owner check, seq, then the writes. suffix ('' for a direct send) is
-- appended to the caller's record before conversation_seq: the group scripts add
-- membership_version there (field 17), read in the same script that allocates the seq, so the
-- version a message is committed under can never differ from the one its seq was checked against.
local function reserve_fresh(with_history, suffix, commit, seq_key, pending, owner_key, idn, mid, cid, rec, now, hrec, hidx, width)
  rec = rec .. suffix
  -- The owner key owns (tenant, sender, client_message_id) across conversations: the commit hash is
  -- tagged by conversation, so without it a cmid reused in another conversation would commit a
  -- second message under one idempotency key.
  local owner = redis.call('GET', owner_key)
  if owner and owner ~= commit then return owner_conflict() end
  local seq, err = next_seq(seq_key, hrec)
  if err then return err end
  local seqs, full = dec(seq), rec .. seq_field(seq)
  redis.call('HSET', commit, 'st', 'R', 'idn', idn, 'mid', mid, 'seq', seqs, 'cid', cid, 'rec', full, 'rat', now)
  redis.call('INCR', seq_key)
  redis.call('SET', owner_key, commit)
  redis.call('ZADD', pending, tonumber(now), commit)
  local st = 'R'
  if with_history then
    redis.call('SET', hrec .. seqs, full)
    redis.call('ZADD', hidx .. dec(math.floor(seq / tonumber(width))), seq, seqs)
    redis.call('HSET', commit, 'st', 'D')
    st = 'D'
  end
  return reply{kind = 'F', st = st, mid = mid, seq = seqs, rec = full, rat = now, cat = '', cid = cid, idn = idn}
end

local function reserve(with_history, arity, commit, seq_key, pending, owner_key,
                       idn, mid, cid, rec, now, hrec, hidx, width, max_rec)
  local bad = check_intent(arity, idn, mid, cid, rec, now, hrec, hidx, width, max_rec)
  if bad then return bad end
  local done = reserve_existing(with_history, commit, seq_key, pending, owner_key, idn, cid, hrec, hidx, width)
  if done then return done end
  return reserve_fresh(with_history, '', commit, seq_key, pending, owner_key, idn, mid, cid, rec, now, hrec, hidx, width)
end
