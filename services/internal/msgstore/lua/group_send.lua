--! keys: commit seq pending owner grp grpmem
--! argv: identity message_id conversation_id record now_ms hrec_prefix hidx_prefix bucket_width max_record_bytes sender
--! reply: kind st mid seq rec rat cat cid idn
-- group_send.lua: reserve_and_record.lua for a group conversation, with the membership check in
-- the same script that allocates the seq.
--   grp     the group's meta hash (v = membership version)
--   grpmem  the member intervals hash (field = user id, value "j:l,…,j:" — open when it ends in ':')
--   sender  the sending user (decimal)
-- An existing commit of this request (an ACK-lost retry) is returned before any membership
-- check: a sender removed since its first attempt still gets the ACK of what was committed. A
-- fresh send is refused (QIMNOTMEMBER) unless the sender's last interval is open, and commits
-- under the version read here: the record gets field 17 (membership_version) right before
-- field 4, so every reader knows the exact audience version without a second lookup. Nothing is
-- written before the checks pass, so a refused send consumes no seq.
local bad = check_intent(ARITY, A_identity, A_message_id, A_conversation_id, A_record, A_now_ms,
  A_hrec_prefix, A_hidx_prefix, A_bucket_width, A_max_record_bytes)
if bad then return bad end
local done = reserve_existing(true, K_commit, K_seq, K_pending, K_owner, A_identity, A_conversation_id,
  A_hrec_prefix, A_hidx_prefix, A_bucket_width)
if done then return done end
local v = redis.call('HGET', K_grp, 'v')
if not v then return fail('QIMNOGROUP', 'no such group') end
local ver = posint(v)
if not ver then return fail('QIMCORRUPT', 'group membership version is not a positive integer') end
local iv = redis.call('HGET', K_grpmem, A_sender)
if not iv or string.sub(iv, -1) ~= ':' then return fail('QIMNOTMEMBER', 'sender is not a current member') end
return reserve_fresh(true, version_field(ver), K_commit, K_seq, K_pending, K_owner, A_identity, A_message_id,
  A_conversation_id, A_record, A_now_ms, A_hrec_prefix, A_hidx_prefix, A_bucket_width)
