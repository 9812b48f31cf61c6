// Package ratelimit bounds the SENDs a ConnectionNode admits: per connection, per sender (all of
// a user's devices, on every gateway) and per tenant, each a token bucket configured per tenant
// (rules.go). A SEND that finds a bucket empty is refused RATE_LIMITED with the time until the
// bucket holds a token again, before it reaches the writer, so it commits nothing; the SDKs hold
// their sends for that long and retry with the same client_message_id.
//
// Invariants:
//   - a refusal takes no token: the buckets a refused SEND had already passed get theirs back,
//     so a client kept below one limit does not drain another;
//   - the decision never waits on Redis: each gateway decides from its local buckets (the fast
//     path costs a map lookup and three bucket updates), and a shared bucket learns what the
//     other gateways admitted by share.lua, once per sync interval for every bucket used in
//     the last activeFor — one EVALSHA per 256 buckets, not one command per SEND;
//   - unreachable Redis never refuses a SEND: the local buckets go on limiting what each
//     gateway admits (fail-open, counted in qim_gateway_rate_limit_sync_failures_total). A limit
//     protects capacity; refusing every send because the limiter's store is down would turn a
//     Redis outage into a full one.
//
// What sharing costs in accuracy: a sender or tenant spread over n gateways can pass its burst
// plus n × (PerSecond × sync interval) more than one gateway would allow, plus a burst at each
// gateway where it had been idle for activeFor. It never passes less.
//
// Rejected: a Redis round trip per SEND (exact, and one more command per message on the core
// Redis, the thing the efficiency work counts), and per-gateway limits only (a user with four
// devices on four gateways would get four times the rate).
package ratelimit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/qim-dev/qim/contract"
)

// Scope names the bucket that refused a SEND; it is the label of the refusal metric.
type Scope string

// The three scopes, tested in this order.
const (
	ScopeConnection Scope = "connection"
	ScopeSender     Scope = "sender"
	ScopeTenant     Scope = "tenant"
)

// maxBuckets bounds the shared buckets held (~300 bytes each). Beyond it the least recently used
// is forgotten and restarts full: at worst one more burst for a sender idle the longest.
const maxBuckets = 200_000

// Observer receives what the limiter does, for metrics. Calls come from the SEND path (Refused)
// and the sync loop; they must not block.
type Observer interface {
	Refused(Scope)
	Synced(buckets int, took time.Duration, err error)
}

// Options configure a Limiter.
type Options struct {
	// Redis holds the shared buckets (the core Redis). Nil: every bucket is local to this
	// gateway.
	Redis redis.Cmdable
	// Gateway is this process's instance id in the shared buckets; unique per process start.
	Gateway string
	// Sync is how often shared buckets are exchanged (default 250 ms). Shorter is more exact
	// across gateways at one EVALSHA per 256 active buckets per interval.
	Sync     time.Duration
	Observer Observer
}

// bucketKey names a shared bucket: a sender's (user ≠ 0) or its tenant's (user 0; user ids
// start at 1).
type bucketKey struct {
	tenant contract.TenantID
	user   uint64
}

// shared is one sender's or tenant's bucket on this gateway.
type shared struct {
	key  bucketKey
	lim  *rate.Limiter
	used atomic.Int64 // SENDs admitted here, cumulative
	// lastUse is the Unix ns of the last admitted SEND; active is set while the bucket is in
	// the sync set.
	lastUse atomic.Int64
	active  atomic.Bool
	// others is what the other gateways had admitted at the last sync; known once one answered.
	others int64
	known  bool
}

// Limiter holds the buckets. Safe for concurrent use.
type Limiter struct {
	rules   Rules
	opts    Options
	buckets *expirable.LRU[bucketKey, *shared]

	mu     sync.Mutex
	active map[bucketKey]*shared // used within activeFor: the sync set
}

// New is a Limiter enforcing rules.
func New(rules Rules, opts Options) *Limiter {
	if opts.Sync <= 0 {
		opts.Sync = 250 * time.Millisecond
	}
	// An idle bucket is full again after its refill time, so forgetting it then changes nothing.
	ttl := max(rules.longestRefill(), time.Minute)
	return &Limiter{rules: rules, opts: opts, active: map[bucketKey]*shared{},
		buckets: expirable.NewLRU[bucketKey, *shared](maxBuckets, nil, ttl)}
}

// Conn is the bucket of a new connection of tenant; nil when its tier does not limit connections.
func (l *Limiter) Conn(tenant contract.TenantID) *rate.Limiter {
	return l.rules.For(tenant).Connection.limiter()
}

// Verdict is the answer for one SEND: allowed when Scope is empty, else refused by Scope's
// bucket, which holds a token again after RetryAfter.
type Verdict struct {
	Scope      Scope
	RetryAfter time.Duration
}

// Allowed reports whether the SEND may go on.
func (v Verdict) Allowed() bool { return v.Scope == "" }

// Allow decides one SEND of user in tenant on the connection whose bucket is conn (nil: none).
func (l *Limiter) Allow(conn *rate.Limiter, tenant contract.TenantID, user contract.UserID, now time.Time) Verdict {
	tier := l.rules.For(tenant)
	var taken [3]*rate.Reservation
	n := 0
	refuse := func(s Scope, d time.Duration) Verdict {
		for _, r := range taken[:n] {
			r.CancelAt(now)
		}
		if l.opts.Observer != nil {
			l.opts.Observer.Refused(s)
		}
		return Verdict{Scope: s, RetryAfter: d}
	}
	var sender, ten *shared
	if !tier.Sender.Off() {
		sender = l.bucket(bucketKey{tenant, uint64(user)}, tier.Sender)
	}
	if !tier.Tenant.Off() {
		ten = l.bucket(bucketKey{tenant: tenant}, tier.Tenant)
	}
	for _, b := range [...]struct { // an array, not a slice: nothing allocated per SEND
		scope Scope
		lim   *rate.Limiter
	}{{ScopeConnection, conn}, {ScopeSender, sender.limiter()}, {ScopeTenant, ten.limiter()}} {
		if b.lim == nil {
			continue
		}
		r := b.lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			return refuse(b.scope, max(d, time.Millisecond))
		}
		taken[n] = r
		n++
	}
	l.admitted(sender, now)
	l.admitted(ten, now)
	return Verdict{}
}

func (s *shared) limiter() *rate.Limiter {
	if s == nil {
		return nil
	}
	return s.lim
}

// bucket finds or makes the shared bucket of k.
func (l *Limiter) bucket(k bucketKey, r Rule) *shared {
	if b, ok := l.buckets.Get(k); ok {
		return b
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets.Get(k); ok {
		return b
	}
	b := &shared{key: k, lim: r.limiter()}
	l.buckets.Add(k, b)
	return b
}

// admitted counts one SEND into b and puts b in the sync set.
func (l *Limiter) admitted(b *shared, now time.Time) {
	if b == nil {
		return
	}
	b.used.Add(1)
	b.lastUse.Store(now.UnixNano())
	if l.opts.Redis == nil || b.active.Load() {
		return
	}
	l.mu.Lock()
	if !b.active.Load() {
		l.active[b.key] = b
		b.active.Store(true)
	}
	l.mu.Unlock()
}
