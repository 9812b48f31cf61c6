-- bind.lua: bind a topic's checkpoints to the log they count offsets of, once.
--
-- KEYS[1] the checkpoint hash of the topic
-- ARGV[1] Kafka cluster id, ARGV[2] topic id (32 hex digits), ARGV[3] partition count
--
-- A hash without a binding gets this one (and must hold nothing else: offsets without a binding
-- could belong to any log). Returns {cluster_id, topic_id, partitions, fresh} as stored after
-- the call; fresh is 1 when this call bound it. The caller compares and refuses a mismatch.
if #ARGV[2] ~= 32 or not posint(ARGV[3]) or ARGV[1] == '' then
  return fail('QIMINVAL', 'bad binding')
end
local cur = redis.call('HMGET', KEYS[1], 'cluster_id', 'topic_id', 'partitions')
if not cur[1] and not cur[2] and not cur[3] then
  if redis.call('HLEN', KEYS[1]) ~= 0 then
    return fail('QIMCORRUPT', 'checkpoints without a binding')
  end
  redis.call('HSET', KEYS[1], 'cluster_id', ARGV[1], 'topic_id', ARGV[2], 'partitions', ARGV[3])
  return {ARGV[1], ARGV[2], ARGV[3], 1}
end
if not cur[1] or not cur[2] or not cur[3] then
  return fail('QIMCORRUPT', 'partial binding')
end
return {cur[1], cur[2], cur[3], 0}
