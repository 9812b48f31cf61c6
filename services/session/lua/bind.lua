--! keys: checkpoint
--! argv: cluster_id topic_id partitions
--! reply: cluster_id topic_id partitions fresh
-- bind.lua: bind a topic's checkpoints to the log they count offsets of, once.
--
-- Keys: checkpoint the checkpoint hash of the topic. Arguments: cluster_id the Kafka cluster id,
-- topic_id (32 hex digits), partitions the partition count.
--
-- A hash without a binding gets this one (and must hold nothing else: offsets without a binding
-- could belong to any log). Answers the binding as stored after the call; fresh is 1 when this
-- call bound it. The caller compares and refuses a mismatch.
if #A_topic_id ~= 32 or not posint(A_partitions) or A_cluster_id == '' then
  return fail('QIMINVAL', 'bad binding')
end
local cur = redis.call('HMGET', K_checkpoint, 'cluster_id', 'topic_id', 'partitions')
if not cur[1] and not cur[2] and not cur[3] then
  if redis.call('HLEN', K_checkpoint) ~= 0 then
    return fail('QIMCORRUPT', 'checkpoints without a binding')
  end
  redis.call('HSET', K_checkpoint, 'cluster_id', A_cluster_id, 'topic_id', A_topic_id, 'partitions', A_partitions)
  return reply{cluster_id = A_cluster_id, topic_id = A_topic_id, partitions = A_partitions, fresh = 1}
end
if not cur[1] or not cur[2] or not cur[3] then
  return fail('QIMCORRUPT', 'partial binding')
end
return reply{cluster_id = cur[1], topic_id = cur[2], partitions = cur[3], fresh = 0}
