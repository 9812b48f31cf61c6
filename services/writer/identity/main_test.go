package identity

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// coreRedis returns a client of the stack's core Redis (appendfsync always), closed after t.
func coreRedis(t *testing.T) *redis.Client {
	t.Helper()
	ep := itest.Endpoints(t)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// regionSeq hands each test its own region_id so tests sharing the stack (or a reused one via
// QIM_IT_ENDPOINTS) never touch each other's keys; it starts at a per-run offset.
var regionSeq atomic.Uint32

func init() { regionSeq.Store(uint32(time.Now().UnixNano()%50000) + 1000) }

// testRegion returns a fresh region and deletes its keys (ids below maxWriters) after t: only
// keys this test created, never a flush.
func testRegion(t *testing.T, rdb *redis.Client, maxWriters int) uint16 {
	t.Helper()
	region := uint16(regionSeq.Add(1))
	t.Cleanup(func() {
		keys := make([]string, 0, 2*maxWriters)
		for w := range maxWriters {
			keys = append(keys, HLCKey(region, uint16(w)), LeaseKey(region, uint16(w)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rdb.Del(ctx, keys...).Err() // test cleanup only; a failure leaves unique keys behind
	})
	return region
}

// fakeClock is a settable wall clock (Unix ms).
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock(ms int64) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(ms)
	return c
}

func (c *fakeClock) Now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Set(ms int64)        { c.ms.Store(ms) }
func (c *fakeClock) Add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// eventually polls cond every 5ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedHW reads the high-water mark of (region, writer).
func storedHW(t *testing.T, rdb *redis.Client, region, writer uint16) uint64 {
	t.Helper()
	s, err := rdb.HGet(context.Background(), HLCKey(region, writer), "hw").Result()
	if err != nil {
		t.Fatalf("read hw: %v", err)
	}
	hw, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("hw %q: %v", s, err)
	}
	return hw
}
