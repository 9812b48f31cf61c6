--! keys: commit
--! argv: conversation_id hrec_prefix hidx_prefix bucket_width
--! reply: kind st mid seq rec rat cat cid idn
-- record.lua: RESERVED → RECORDED from the record stored in the commit hash.
--   conversation_id 16 B, must equal the stored one; hrec_prefix/hidx_prefix the history record
--   and index key prefixes; bucket_width the seq bucket width
-- On R: write the history record + index (an identical existing record is fine, different
-- bytes are corruption) and set st = D. On D or C: no-op, returns the current commit.
if not ARITY then return fail('QIMINVAL', 'want 4 arguments') end
local width = posint(A.bucket_width)
if not width then return fail('QIMINVAL', 'bucket width must be a positive integer') end
local h = load_commit(K.commit)
if not h[1] then return fail('QIMNOTFOUND', 'no commit under this key') end
if h[7] ~= A.conversation_id then return fail('QIMINVAL', 'commit belongs to another conversation') end
if h[1] == 'D' or h[1] == 'C' then return commit_reply('E', h) end
if h[1] ~= 'R' then return fail('QIMCORRUPT', 'unknown commit state') end
local seq = posint(h[3])
if not seq or not h[4] or #h[4] == 0 then return fail('QIMCORRUPT', 'reserved commit lacks seq or record') end
local err = write_history(A.hrec_prefix, A.hidx_prefix, width, seq, h[3], h[4])
if err then return err end
redis.call('HSET', K.commit, 'st', 'D')
h[1] = 'D'
return commit_reply('E', h)
