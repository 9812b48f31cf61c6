package ratelimit

import (
	"context"
	"embed"
	"fmt"
	"strconv"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// KeyPrefix starts every shared bucket's key.
const KeyPrefix = "qim:rlim:"

// shareBatch bounds the buckets of one share.lua call, so one call stays short on Redis.
const shareBatch = 256

// activeFor is how long after its last admitted SEND a bucket stays in the sync set: the other
// gateways' use keeps being taken from it while its sender may still send here.
const activeFor = 10 * time.Second

// silentGateway is how long a gateway's count stays in a shared bucket after it last spoke: a
// stopped gateway's SENDs no longer count once their tokens would have come back anyway.
const silentGateway = time.Minute

type shareArgs struct {
	Bucket  []string `key:"bucket"`
	Gateway string   `arg:"gateway"`
	NowMs   int64    `arg:"now_ms"`
	TTLMs   int64    `arg:"ttl_ms"`
	Used    []string `arg:"used"`
}

type shareOut struct {
	Others []int64 `reply:"others"`
}

var shareScript = luascript.MustBind[shareArgs, shareOut](luaFS, "", "share.lua")

// Key is the Redis key of a shared bucket: a tenant's (user 0) or a sender's.
func Key(tenant contract.TenantID, user uint64) string {
	if user == 0 {
		return KeyPrefix + tenant.String()
	}
	return KeyPrefix + tenant.String() + ":" + strconv.FormatUint(user, 10)
}

// KeyFamilies declares the keys share.lua writes, for the redis-artifacts gate.
func KeyFamilies() []keyfamily.Family {
	return []keyfamily.Family{
		keyfamily.New("gateway.rate_limit_bucket", keyfamily.Core, "qim:rlim:<tenant>[:<user>]", KeyPrefix,
			`[0-9a-f]{32}(:[1-9][0-9]*)?`).WithExample(Key(contract.TenantID{Lo: 1}, 42)).Expiring(),
	}
}

// Preload loads the script, so the first sync pays no NOSCRIPT trip.
func (l *Limiter) Preload(ctx context.Context) error {
	if l.opts.Redis == nil {
		return nil
	}
	if err := luascript.Preload(ctx, l.opts.Redis, shareScript.Script()); err != nil {
		return fmt.Errorf("ratelimit: %w", err)
	}
	return nil
}

// Run exchanges the shared buckets every sync interval until ctx ends. A failed exchange is
// reported to the Observer and retried at the next interval; it never stops the loop.
func (l *Limiter) Run(ctx context.Context) error {
	if l.opts.Redis == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(l.opts.Sync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			l.SyncOnce(ctx, now)
		}
	}
}

// SyncOnce exchanges every bucket of the sync set once and drops the idle ones from it.
func (l *Limiter) SyncOnce(ctx context.Context, now time.Time) {
	batch := l.syncSet(now)
	for len(batch) > 0 {
		n := min(len(batch), shareBatch)
		start := time.Now()
		err := l.share(ctx, batch[:n], now)
		if l.opts.Observer != nil {
			l.opts.Observer.Synced(n, time.Since(start), err)
		}
		batch = batch[n:]
	}
}

// syncSet returns the buckets to exchange now and forgets those idle for activeFor; an idle
// bucket is exchanged one last time, so the others learn its final count.
func (l *Limiter) syncSet(now time.Time) []*shared {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*shared, 0, len(l.active))
	for k, b := range l.active {
		out = append(out, b)
		if now.Sub(time.Unix(0, b.lastUse.Load())) > activeFor {
			delete(l.active, k)
			b.active.Store(false)
		}
	}
	return out
}

// share runs share.lua for bs and takes from each local bucket what the other gateways admitted
// into it since the last exchange.
func (l *Limiter) share(ctx context.Context, bs []*shared, now time.Time) error {
	a := shareArgs{Gateway: l.opts.Gateway, NowMs: now.UnixMilli(), TTLMs: silentGateway.Milliseconds(),
		Bucket: make([]string, len(bs)), Used: make([]string, len(bs))}
	for i, b := range bs {
		a.Bucket[i] = Key(b.key.tenant, b.key.user)
		a.Used[i] = strconv.FormatInt(b.used.Load(), 10)
	}
	out, err := shareScript.Do(ctx, l.opts.Redis, &a)
	if err != nil {
		return fmt.Errorf("ratelimit: share %d buckets: %w", len(bs), err)
	}
	if len(out.Others) != len(bs) {
		return fmt.Errorf("ratelimit: share answered %d counts for %d buckets", len(out.Others), len(bs))
	}
	for i, b := range bs {
		b.learn(out.Others[i], now)
	}
	return nil
}

// learn takes the growth of the other gateways' count from the local bucket. The first answer
// only sets the baseline: what the others admitted before this gateway used the bucket is
// already spent. A count that went down (a silent gateway's field dropped) resets the baseline.
func (b *shared) learn(others int64, now time.Time) {
	grew := others - b.others
	first := !b.known
	b.others, b.known = others, true
	if first || grew <= 0 {
		return
	}
	burst := int64(b.lim.Burst())
	for grew > 0 { // ReserveN refuses more than a burst at once; debt beyond it is kept in steps
		n := min(grew, burst)
		b.lim.ReserveN(now, int(n))
		grew -= n
	}
}
