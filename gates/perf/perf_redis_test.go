package perf

import (
	"strings"
	"testing"

	"github.com/qim-dev/qim/gates"
)

func TestRedisCallsPerMessage(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_evalsha:calls=1200,usec=9000,usec_per_call=7.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=9,usec=90\r\ncmdstat_get:calls=300,usec=30\r\nnot a line\r\n"
	got := parseCommandStats(info)
	if len(got) != 3 || got["evalsha"] != 1200 || got["get"] != 300 {
		t.Fatalf("parseCommandStats = %v", got)
	}
	before := redisCalls{"redis-core": {"evalsha": 200, "get": 100, "info": 1}}
	after := redisCalls{"redis-core": {"evalsha": 1200, "get": 300, "info": 3, "hset": 50}}
	r := &gates.Result{}
	line := redisPerMessage(r, "", before, after, 500)
	if r.Metrics["redis_cmds_per_msg_redis-core"] != 2.5 || r.Metrics["redis_cmd_per_msg_redis-core_evalsha"] != 2 ||
		r.Metrics["redis_cmd_per_msg_redis-core_hset"] != 0.1 {
		t.Fatalf("metrics %v (INFO itself must not count)", r.Metrics)
	}
	if r.Metrics["redis_script_calls_per_msg_redis-core"] != 2 {
		t.Fatalf("script calls %v", r.Metrics)
	}
	if !strings.Contains(line, "redis-core 2.50, of them 2.00 script calls (evalsha 2.00, get 0.40, hset 0.10)") {
		t.Fatalf("line %q", line)
	}
	if line := redisPerMessage(&gates.Result{}, "", before, after, 0); !strings.Contains(line, "no ACKed") {
		t.Fatalf("zero messages: %q", line)
	}
}
