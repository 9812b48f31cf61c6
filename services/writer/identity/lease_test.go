package identity

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var fastLease = WithLeaseTiming(40*time.Millisecond, 120*time.Millisecond)

func TestLeaseDistinctIDsAndReclaim(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 4)
	ctx := context.Background()
	claim := func() (*Lease, error) { return ClaimLease(ctx, rdb, region, WithMaxWriters(4), fastLease) }
	var held []*Lease
	seen := map[uint16]bool{}
	for range 4 {
		l, err := claim()
		if err != nil {
			t.Fatal(err)
		}
		if seen[l.WriterID()] {
			t.Fatalf("writer_id %d leased twice", l.WriterID())
		}
		seen[l.WriterID()] = true
		held = append(held, l)
	}
	if _, err := claim(); !errors.Is(err, ErrNoFreeWriterID) {
		t.Fatalf("fifth claim of 4 ids: %v", err)
	}
	released := held[1]
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released.Lost():
	default:
		t.Fatal("Release did not close Lost()")
	}
	again, err := claim()
	if err != nil {
		t.Fatal(err)
	}
	if again.WriterID() != released.WriterID() {
		t.Fatalf("released id %d not reclaimed (got %d)", released.WriterID(), again.WriterID())
	}
	// The old holder's release is idempotent and must not delete the new holder's lease.
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := rdb.Exists(ctx, LeaseKey(region, again.WriterID())).Result(); v != 1 {
		t.Fatal("a stale Release deleted another owner's lease")
	}
}

func TestLeaseFixedWriterID(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 8)
	ctx := context.Background()
	a, err := ClaimLease(ctx, rdb, region, WithFixedWriterID(7), fastLease)
	if err != nil || a.WriterID() != 7 {
		t.Fatalf("fixed claim: %v %v", a, err)
	}
	_, err = ClaimLease(ctx, rdb, region, WithFixedWriterID(7), fastLease)
	var held *LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) || held.WriterID != 7 || held.Region != region {
		t.Fatalf("second fixed claim of 7: %v", err)
	}
	auto, err := ClaimLease(ctx, rdb, region, WithMaxWriters(8), fastLease)
	if err != nil || auto.WriterID() == 7 {
		t.Fatalf("auto claim beside a fixed lease: %v %v", auto, err)
	}
}

// A retried claim (reply lost) must return the id it already took, not take a second one.
func TestLeaseScriptsIdempotent(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 4)
	ctx := context.Background()
	prefix := string(appendLeasePrefix(nil, region))
	claim := func(maxWriters int, owner string) (int64, error) {
		r, err := leaseClaimScript.Do(ctx, rdb, &leaseClaimArgs{Prefix: prefix, MaxWriters: maxWriters, Owner: owner, TTLMs: 5000})
		return r.WriterID, err
	}
	first, err := claim(4, "owner-a")
	if err != nil {
		t.Fatal(err)
	}
	retry, err := claim(4, "owner-a")
	if err != nil || retry != first {
		t.Fatalf("retry took id %d (%v), first %d", retry, err, first)
	}
	key := LeaseKey(region, 3)
	for range 2 {
		if r, err := leaseClaimFixedScript.Do(ctx, rdb, &leaseArgs{Lease: key, Owner: "owner-b", TTLMs: 5000}); err != nil || r.Held != 1 {
			t.Fatalf("fixed claim (retry): %d %v", r.Held, err)
		}
	}
	if _, err := claim(0, "owner-c"); err == nil {
		t.Fatal("max_writers 0 accepted")
	}
}

func TestLeaseRunKeepsLease(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 1)
	ctx, cancel := context.WithCancel(context.Background())
	l, err := ClaimLease(ctx, rdb, region, WithMaxWriters(1), fastLease)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	time.Sleep(400 * time.Millisecond) // > 3 TTLs: only renewals keep the key alive
	if n, _ := rdb.Exists(ctx, LeaseKey(region, l.WriterID())).Result(); n != 1 || l.Err() != nil {
		t.Fatalf("lease not kept by Run: exists=%d err=%v", n, l.Err())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
}

func TestLeaseLostWhenTakenBehindItsBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(ctx context.Context, rdb *redis.Client, key string) error
	}{
		{"key deleted", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.Del(ctx, key).Err()
		}},
		{"another owner", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.Set(ctx, key, "someone-else", time.Minute).Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := coreRedis(t)
			region := testRegion(t, rdb, 1)
			ctx := context.Background()
			l, err := ClaimLease(ctx, rdb, region, WithMaxWriters(1), fastLease)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- l.Run(ctx) }()
			if err := tc.tamper(ctx, rdb, LeaseKey(region, l.WriterID())); err != nil {
				t.Fatal(err)
			}
			select {
			case <-l.Lost():
			case <-time.After(2 * 40 * time.Millisecond * 3): // a couple of renew intervals, with slack
				t.Fatal("Lost() not closed")
			}
			if err := <-done; !errors.Is(err, ErrLeaseLost) || !errors.Is(l.Err(), ErrLeaseLost) {
				t.Fatalf("Run = %v, Err = %v", err, l.Err())
			}
			if tc.name == "another owner" {
				if v, _ := rdb.Get(ctx, LeaseKey(region, l.WriterID())).Result(); v != "someone-else" {
					t.Fatal("a lost lease was re-taken")
				}
			}
		})
	}
}

// Redis unreachable: the lease is declared lost once its TTL could have run out, not before the
// first failed renewal and not much later than the TTL.
func TestLeaseLostWhenRedisUnreachable(t *testing.T) {
	admin := coreRedis(t)
	region := testRegion(t, admin, 1)
	rdb := redis.NewClient(&redis.Options{Addr: admin.Options().Addr})
	l, err := ClaimLease(context.Background(), rdb, region, WithMaxWriters(1), fastLease)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = rdb.Close() // every renewal now fails
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	select {
	case <-l.Lost():
	case <-time.After(time.Second):
		t.Fatal("Lost() not closed after the TTL passed without renewal")
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("declared lost after %v, before the TTL could have passed", waited)
	}
	if err := <-done; !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Run = %v", err)
	}
}
