package identity

import (
	"context"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/redis/go-redis/v9"
)

// benchIssuer is an Issuer with a one-hour window installed directly (no Redis): Next never
// touches Redis, so this measures exactly the hot path.
func benchIssuer(b *testing.B) *Issuer {
	b.Helper()
	is, err := NewIssuer(nil, 1, 2)
	if err != nil {
		b.Fatal(err)
	}
	now := uint64(time.Now().UnixMilli())
	if err := is.clock.Install(Window{Start: now, End: now + uint64(time.Hour.Milliseconds())}); err != nil {
		b.Fatal(err)
	}
	return is
}

func BenchmarkIssuerNext(b *testing.B) {
	is := benchIssuer(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := is.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIssuerNextParallel(b *testing.B) {
	is := benchIssuer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := is.Next(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkIssuerNextBatch64(b *testing.B) {
	is := benchIssuer(b)
	dst := make([]contract.MessageID, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = is.NextBatch(dst[:0], 64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClockNext(b *testing.B) {
	c := NewClock(time.Second)
	if err := c.Install(Window{Start: 1, End: 1 << 48}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := c.Next(int64(i >> 10)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeaseClaimScan measures the start-up claim with the default 1024 writer_ids (the
// script GETs every id once, so this is how long one claim blocks the core Redis).
func BenchmarkLeaseClaimScan(b *testing.B) {
	ep := itest.Endpoints(b)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisCore})
	defer rdb.Close()
	region := uint16(regionSeq.Add(1))
	ctx := context.Background()
	for b.Loop() {
		l, err := ClaimLease(ctx, rdb, region)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
