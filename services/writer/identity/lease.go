package identity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease is one writer_id of one region held in the core Redis as
// qim:writer-lease:<region>:<writer> = owner (32 random hex digits), PX ttl.
//
// Invariants: while Lost() is open, Redis accepted our last renewal less than one TTL ago
// (measured from when the request was sent, which is no later than when Redis started the TTL),
// so no other owner can hold the id. A renewal refused by Redis (key gone or another owner) or
// not confirmed before that deadline closes Lost() for good; a lost lease is never silently
// re-taken, because another process may have used the id in between.
// How: SET NX PX on claim, a Lua compare-and-PEXPIRE every renew interval, compare-and-DEL on
// Release. Each renewal attempt is cut off at the deadline so a hung connection cannot keep the
// lease "alive" locally after Redis let it expire.
//
// Rejected alternative: INCR a counter for writer_ids. It never reuses ids, so a restarting
// fleet walks through the 16-bit space, and nothing tells a live process that a newer one shares
// its id. Note that the lease keeps ids distinct but does not by itself make message_ids unique:
// the persisted HLC windows (Issuer) do, even when two processes wrongly share a writer_id.
type Lease struct {
	rdb    redis.Scripter
	region uint16
	writer uint16
	key    string
	owner  string // never logged: it is the only proof of ownership
	cfg    leaseConfig

	mu       sync.Mutex
	deadline time.Time // the lease is provably ours until then

	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error // set before lost is closed
}

// ClaimLease leases a writer_id of region in the core Redis: the lowest free one in
// [0, WithMaxWriters), or exactly WithFixedWriterID. It returns *NoFreeWriterIDError or
// *LeaseHeldError when none can be had. The caller must run Lease.Run to keep it.
func ClaimLease(ctx context.Context, rdb redis.Scripter, region uint16, opts ...LeaseOption) (*Lease, error) {
	var cfg leaseConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	l := &Lease{rdb: rdb, region: region, owner: owner, cfg: cfg, lost: make(chan struct{})}
	sent := time.Now()
	if cfg.fixed {
		err = l.claimFixed(ctx)
	} else {
		err = l.claimLowest(ctx)
	}
	if err != nil {
		return nil, err
	}
	l.deadline = sent.Add(cfg.ttl)
	return l, nil
}

func (l *Lease) claimFixed(ctx context.Context) error {
	l.writer = l.cfg.fixedID
	l.key = string(appendLeaseKey(nil, l.region, l.writer))
	r, err := leaseClaimFixedScript.Do(ctx, l.rdb, &leaseArgs{Lease: l.key, Owner: l.owner, TTLMs: l.cfg.ttl.Milliseconds()})
	if err != nil {
		return fmt.Errorf("identity: claim writer lease %s: %w", l.key, err)
	}
	if r.Held != 1 {
		return &LeaseHeldError{Region: l.region, WriterID: l.writer}
	}
	return nil
}

func (l *Lease) claimLowest(ctx context.Context) error {
	prefix := string(appendLeasePrefix(nil, l.region))
	r, err := leaseClaimScript.Do(ctx, l.rdb, &leaseClaimArgs{Prefix: prefix, MaxWriters: l.cfg.maxWriters,
		Owner: l.owner, TTLMs: l.cfg.ttl.Milliseconds()})
	id := r.WriterID
	if err != nil {
		return fmt.Errorf("identity: claim writer lease in region %d: %w", l.region, err)
	}
	if id < 0 {
		return &NoFreeWriterIDError{Region: l.region, MaxWriters: l.cfg.maxWriters}
	}
	if id >= int64(l.cfg.maxWriters) {
		return fmt.Errorf("identity: claim writer lease in region %d: script returned id %d outside [0, %d)",
			l.region, id, l.cfg.maxWriters)
	}
	l.writer = uint16(id)
	l.key = string(appendLeaseKey(nil, l.region, l.writer))
	return nil
}

func newOwner() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("identity: lease owner value: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// WriterID is the leased writer_id.
func (l *Lease) WriterID() uint16 { return l.writer }

// Region is the region the lease belongs to.
func (l *Lease) Region() uint16 { return l.region }

// Lost is closed once the lease is lost or released; issue no more ids with this writer_id.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is nil while the lease is held, then the reason it was lost (errors.Is ErrLeaseLost).
func (l *Lease) Err() error {
	select {
	case <-l.lost:
		return l.lostErr
	default:
		return nil
	}
}

// Run renews the lease every renew interval until ctx ends (returns ctx.Err(), lease still held:
// call Release) or the lease is lost (closes Lost() and returns an error matching ErrLeaseLost).
// A failed renewal is retried at a quarter of the interval until the deadline passes.
func (l *Lease) Run(ctx context.Context) error {
	timer := time.NewTimer(l.cfg.renew)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.lost:
			return l.lostErr
		case <-timer.C:
		}
		err := l.renew(ctx)
		switch {
		case err == nil:
			timer.Reset(l.cfg.renew)
		case errors.Is(err, ErrLeaseLost):
			l.markLost(err)
			return l.lostErr
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			timer.Reset(max(l.cfg.renew/4, time.Millisecond))
		}
	}
}

// renew makes one renewal attempt, bounded by the deadline. It returns nil on success, an error
// matching ErrLeaseLost when Redis refused or the deadline passed, another error to retry.
func (l *Lease) renew(ctx context.Context) error {
	l.mu.Lock()
	deadline := l.deadline
	l.mu.Unlock()
	sent := time.Now()
	if !sent.Before(deadline) {
		return fmt.Errorf("%w: %s not renewed within its TTL %v", ErrLeaseLost, l.key, l.cfg.ttl)
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	r, err := leaseRenewScript.Do(actx, l.rdb, &leaseArgs{Lease: l.key, Owner: l.owner, TTLMs: l.cfg.ttl.Milliseconds()})
	switch {
	case err != nil && ctx.Err() == nil && !time.Now().Before(deadline):
		return fmt.Errorf("%w: %s not renewed within its TTL %v: %w", ErrLeaseLost, l.key, l.cfg.ttl, err)
	case err != nil:
		return fmt.Errorf("identity: renew writer lease %s: %w", l.key, err)
	case r.Renewed != 1:
		return fmt.Errorf("%w: %s expired or taken by another owner", ErrLeaseLost, l.key)
	}
	l.mu.Lock()
	l.deadline = sent.Add(l.cfg.ttl)
	l.mu.Unlock()
	return nil
}

func (l *Lease) markLost(err error) {
	l.lostOnce.Do(func() {
		l.lostErr = err
		close(l.lost)
	})
}

// Release deletes the lease if it is still ours and closes Lost(). Releasing a lease that already
// expired or was taken over is not an error (there is nothing of ours to delete). Stop issuing
// ids before calling it.
func (l *Lease) Release(ctx context.Context) error {
	l.markLost(fmt.Errorf("%w: %s released", ErrLeaseLost, l.key))
	if _, err := leaseReleaseScript.Do(ctx, l.rdb, &leaseReleaseArgs{Lease: l.key, Owner: l.owner}); err != nil {
		return fmt.Errorf("identity: release writer lease %s: %w", l.key, err)
	}
	return nil
}
