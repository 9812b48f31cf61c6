--! keys: commit seq
--! argv: conversation_id hrec_prefix hidx_prefix bucket_width
--! reply: kind st mid seq rec rat cat cid idn
-- record.lua: RESERVED → RECORDED from the record stored in the commit hash.
--   seq the conversation_seq counter; conversation_id 16 B, must equal the stored one;
--   hrec_prefix/hidx_prefix the history record and index key prefixes; bucket_width the seq
--   bucket width
-- On R: claim the seq, write the history record + index and set st = D (prelude.lua,
-- record_reserved: an identical existing record is a retry; a different one means another send
-- took the seq, and the commit moves to the next free one). On D or C: no-op, returns the
-- current commit.
if not ARITY then return fail('QIMINVAL', 'want 4 arguments') end
if not posint(A_bucket_width) then return fail('QIMINVAL', 'bucket width must be a positive integer') end
local h = load_commit(K_commit)
if not h[1] then return fail('QIMNOTFOUND', 'no commit under this key') end
if h[7] ~= A_conversation_id then return fail('QIMINVAL', 'commit belongs to another conversation') end
if h[1] == 'D' or h[1] == 'C' then return commit_reply('E', h) end
if h[1] ~= 'R' then return fail('QIMCORRUPT', 'unknown commit state') end
local err = record_reserved(h, K_commit, K_seq, A_hrec_prefix, A_hidx_prefix, A_bucket_width)
if err then return err end
return commit_reply('E', h)
