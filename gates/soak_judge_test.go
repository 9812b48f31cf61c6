package gates

import (
	"math"
	"testing"
)

// soakSamples builds n samples 10 s apart: one process whose goroutines follow g(i), and stores
// that follow store(i) over commits 1000·i.
func soakSamples(n int, g func(i int) float64, store func(i int) float64) []soakSample {
	out := make([]soakSample, n)
	for i := range out {
		out[i] = soakSample{AtS: float64(10 * i), Commits: float64(1000 * i),
			Procs:          map[string]soakProcSample{"writer": {RSSBytes: 64 << 20, OpenFDs: 40, Goroutines: g(i)}},
			RedisCoreBytes: store(i), RedisMailboxBytes: store(i), KafkaBytes: store(i)}
	}
	return out
}

func checkNamed(r *Result, name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// TestSoakFootprintJudge: a flat series and a warm-up in the first third pass; a steady leak,
// one that starts late, and a store whose growth per message doubles fail; too few samples is
// no evidence. A judge that compared the wrong thirds, or never failed, breaks a case here.
func TestSoakFootprintJudge(t *testing.T) {
	linearStore := func(i int) float64 { return float64(i) * 300_000 }
	cases := []struct {
		name      string
		samples   []soakSample
		check     string
		wantFound bool
		wantPass  bool
	}{
		{"flat goroutines", soakSamples(30, func(int) float64 { return 200 }, linearStore), "writer goroutines bounded", true, true},
		{"warm-up in the first third", soakSamples(30, func(i int) float64 { return 100 + 400*math.Min(float64(i), 9)/9 }, linearStore),
			"writer goroutines bounded", true, true},
		{"steady leak", soakSamples(30, func(i int) float64 { return 200 + 20*float64(i) }, linearStore), "writer goroutines bounded", true, false},
		{"leak starting in the last third", soakSamples(30, func(i int) float64 { return 200 + 60*math.Max(0, float64(i-21)) }, linearStore),
			"writer goroutines bounded", true, false},
		{"store linear in messages", soakSamples(30, func(int) float64 { return 200 }, linearStore), "redis-core used_memory per message", true, true},
		{"store per message doubling", soakSamples(30, func(int) float64 { return 200 }, func(i int) float64 {
			if i <= 15 {
				return float64(i) * 300_000
			}
			return 15*300_000 + float64(i-15)*700_000
		}), "redis-core used_memory per message", true, false},
		{"too few samples", soakSamples(5, func(int) float64 { return 200 }, linearStore), "soak evidence", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Result{}
			judgeFootprint(r, c.samples, 0)
			got, found := checkNamed(r, c.check)
			if found != c.wantFound || (found && got.Passed != c.wantPass) {
				t.Fatalf("%s: found %v passed %v (%s), want found %v passed %v", c.check, found, got.Passed, got.Detail, c.wantFound, c.wantPass)
			}
		})
	}
}
