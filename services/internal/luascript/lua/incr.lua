-- test script: INCR KEYS[1] by ARGV[1] and return the new value
return redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
