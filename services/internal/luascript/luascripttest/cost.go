package luascripttest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Evalsha is the server's own account of EVALSHA: the calls it ran and the microseconds it spent
// inside them (cmdstat_evalsha of INFO commandstats). The difference of two readings around a
// benchmark whose only EVALSHAs are one script's is that script's cost inside Redis per call, the
// figure ADR-0018 compares script versions by; unlike a client's timing it leaves out the network
// and the client.
type Evalsha struct {
	Calls int64
	Usec  int64
}

// Sub is the work between two readings.
func (e Evalsha) Sub(before Evalsha) Evalsha {
	return Evalsha{Calls: e.Calls - before.Calls, Usec: e.Usec - before.Usec}
}

// UsecPerCall is the mean cost of one call; 0 without calls.
func (e Evalsha) UsecPerCall() float64 {
	if e.Calls == 0 {
		return 0
	}
	return float64(e.Usec) / float64(e.Calls)
}

// ReadEvalsha reads cmdstat_evalsha; a server that has run none reads as zero.
func ReadEvalsha(ctx context.Context, rdb redis.Cmdable) (Evalsha, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return Evalsha{}, fmt.Errorf("luascripttest: INFO commandstats: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		var e Evalsha
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, perr := strconv.ParseInt(v, 10, 64)
			switch {
			case k != "calls" && k != "usec":
			case perr != nil:
				return Evalsha{}, fmt.Errorf("luascripttest: cmdstat_evalsha %s=%q: %w", k, v, perr)
			case k == "calls":
				e.Calls = n
			default:
				e.Usec = n
			}
		}
		return e, nil
	}
	return Evalsha{}, nil
}
