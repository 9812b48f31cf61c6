-- reserve.lua: the two-step path's first step, RESERVED only (state R, no history write), so a
-- process can be killed with a RESERVED commit on record ("after-reserve" failpoint).
-- KEYS and ARGV as reserve_and_record.lua; the reply is the same with st = 'R'.
return reserve_fresh('R', false)
