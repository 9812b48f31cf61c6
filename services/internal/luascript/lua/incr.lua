--! keys: counter
--! argv: by
--! value: count
-- incr.lua: a test script of the runner. It INCRBYs the counter and is deliberately NOT
-- idempotent: TestReloadAfterFlush counts how often each call ran.
return reply{count = redis.call('INCRBY', K_counter, tonumber(A_by))}
