package perf

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/stack"
)

// redisCalls is what the stack's Redis servers executed, server → command → calls, read from
// INFO commandstats: the servers' own count, the same for any build under test (an A/B against
// an older commit needs no instrumentation in it).
type redisCalls map[string]map[string]int64

// snapRedisCalls reads INFO commandstats of both Redis servers of the stack.
func snapRedisCalls(ctx context.Context, ep stack.Endpoints) (redisCalls, error) {
	out := redisCalls{}
	for server, addr := range map[string]string{stack.ServerRedisCore: ep.RedisCore, stack.ServerRedisMailbox: ep.RedisMailbox} {
		if addr == "" {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		info, err := rdb.Info(ctx, "commandstats").Result()
		_ = rdb.Close()
		if err != nil {
			return nil, fmt.Errorf("gates: INFO commandstats of %s: %w", server, err)
		}
		out[server] = parseCommandStats(info)
	}
	return out, nil
}

// parseCommandStats reads "cmdstat_<command>:calls=N,usec=…" lines.
func parseCommandStats(info string) map[string]int64 {
	calls := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					calls[strings.TrimPrefix(name, "cmdstat_")] = n
				}
			}
		}
	}
	return calls
}

// scriptCommands are the commands that run a script. Redis 7 counts the commands a script runs
// in commandstats as well, so the total is the servers' work, and the script calls are the
// round trips that carried most of it.
var scriptCommands = map[string]bool{"evalsha": true, "evalsha_ro": true, "eval": true, "eval_ro": true, "fcall": true, "fcall_ro": true}

// redisPerMessage records, from two snapshots around a run, the commands per ACKed message of
// each server (metric redis_cmds_per_msg_<server>) and of its busiest commands
// (redis_cmd_per_msg_<server>_<command>), each name after prefix, and returns one line for people.
func redisPerMessage(r *gates.Result, prefix string, before, after redisCalls, acked int64) string {
	if acked <= 0 {
		return "no ACKed message: no Redis calls per message"
	}
	var parts []string
	servers := make([]string, 0, len(after))
	for s := range after {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	for _, s := range servers {
		type cmd struct {
			name string
			n    int64
		}
		var cmds []cmd
		var total int64
		for name, n := range after[s] {
			if d := n - before[s][name]; d > 0 && name != "info" {
				cmds, total = append(cmds, cmd{name, d}), total+d
			}
		}
		sort.Slice(cmds, func(i, j int) bool { return cmds[i].n > cmds[j].n })
		per := float64(total) / float64(acked)
		r.Metric(prefix+"redis_cmds_per_msg_"+s, per)
		var scripts float64
		top := make([]string, 0, 3)
		for i, c := range cmds {
			v := float64(c.n) / float64(acked)
			r.Metric(prefix+"redis_cmd_per_msg_"+s+"_"+c.name, v)
			if scriptCommands[c.name] {
				scripts += v
			}
			if i < 3 {
				top = append(top, fmt.Sprintf("%s %.2f", c.name, v))
			}
		}
		r.Metric(prefix+"redis_script_calls_per_msg_"+s, scripts)
		parts = append(parts, fmt.Sprintf("%s %.2f, of them %.2f script calls (%s)", s, per, scripts, strings.Join(top, ", ")))
	}
	return "Redis commands per ACKed message: " + strings.Join(parts, "; ")
}
