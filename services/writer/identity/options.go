package identity

import (
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// LeaseOption configures ClaimLease.
type LeaseOption func(*leaseConfig)

type leaseConfig struct {
	maxWriters int
	fixed      bool
	fixedID    uint16
	renew      time.Duration
	ttl        time.Duration
}

// WithMaxWriters bounds automatic writer_id allocation to [0, n), 1 ≤ n ≤ 65536. Default 1024.
// Larger values let more writers share a region but lengthen the start-up claim, which scans
// every id in one script and blocks the core Redis meanwhile (≈1 ms per 1024 ids, measured
// server-side on a loaded 2-core machine). Ignored with WithFixedWriterID.
func WithMaxWriters(n int) LeaseOption { return func(c *leaseConfig) { c.maxWriters = n } }

// WithFixedWriterID leases exactly this writer_id (QIM_WRITER_ID, for StatefulSets with stable
// ordinals). ClaimLease fails with *LeaseHeldError when another owner holds it. Default: the
// lowest free id is allocated.
func WithFixedWriterID(id uint16) LeaseOption {
	return func(c *leaseConfig) { c.fixed, c.fixedID = true, id }
}

// WithLeaseTiming sets the renew interval and the TTL. Defaults: renew contract.WriterLeaseRenew
// (20 s), TTL 3× renew (60 s). A longer TTL survives longer Redis hiccups but keeps a dead
// writer's id unavailable longer; the TTL must exceed the renew interval. Tests use small values.
func WithLeaseTiming(renew, ttl time.Duration) LeaseOption {
	return func(c *leaseConfig) { c.renew, c.ttl = renew, ttl }
}

func (c *leaseConfig) validate() error {
	if c.maxWriters == 0 {
		c.maxWriters = 1024
	}
	if c.renew == 0 && c.ttl == 0 {
		c.renew, c.ttl = contract.WriterLeaseRenew, 3*contract.WriterLeaseRenew
	}
	switch {
	case c.maxWriters < 1 || c.maxWriters > 1<<16:
		return fmt.Errorf("identity: max writers %d outside [1, 65536]", c.maxWriters)
	case c.renew < time.Millisecond || c.ttl < time.Millisecond:
		return errors.New("identity: lease renew interval and TTL must be at least 1ms")
	case c.ttl <= c.renew:
		return fmt.Errorf("identity: lease TTL %v must exceed the renew interval %v", c.ttl, c.renew)
	}
	return nil
}

// IssuerOption configures NewIssuer.
type IssuerOption func(*issuerConfig)

type issuerConfig struct {
	now          func() time.Time
	window       time.Duration
	renewBefore  time.Duration
	lease        *Lease
	backoffMin   time.Duration
	backoffMax   time.Duration
	onClaimError func(error)
}

// WithClock injects the wall clock (tests: frozen or set-back clocks). Default time.Now.
func WithClock(now func() time.Time) IssuerOption { return func(c *issuerConfig) { c.now = now } }

// WithWindow sets the window length claimed per Redis round trip. Default contract.HLCWindow
// (60 s). Longer windows mean fewer claims but more time_ms skipped after a crash (ids stay
// unique, they only jump ahead of wall time); whole milliseconds, longer than renew-before.
func WithWindow(d time.Duration) IssuerOption { return func(c *issuerConfig) { c.window = d } }

// WithRenewBefore sets how early the next window is claimed. Default contract.HLCRenewBefore
// (20 s): the Redis outage the writer rides out without refusing ids. Must be below the window.
func WithRenewBefore(d time.Duration) IssuerOption {
	return func(c *issuerConfig) { c.renewBefore = d }
}

// WithLease ties the Issuer to a writer_id lease: once lease.Lost() closes, Next returns
// ErrLeaseLost and Run returns. The lease's region and writer_id must match the Issuer's.
// Default: no lease (tests, tools); uniqueness then rests on the windows alone.
func WithLease(l *Lease) IssuerOption { return func(c *issuerConfig) { c.lease = l } }

// WithRetryBackoff bounds the delay between failed window claims. Defaults 100ms and 2s: short
// enough that a few retries fit in renew-before, long enough not to hammer a recovering Redis.
func WithRetryBackoff(minDelay, maxDelay time.Duration) IssuerOption {
	return func(c *issuerConfig) { c.backoffMin, c.backoffMax = minDelay, maxDelay }
}

// WithClaimErrorHook is called from Run with every failed claim (for a metric or a log line).
// Default: none. It must not block; the error never contains owner values.
func WithClaimErrorHook(f func(error)) IssuerOption {
	return func(c *issuerConfig) { c.onClaimError = f }
}

func (c *issuerConfig) validate(region, writer uint16) error {
	if c.now == nil {
		c.now = time.Now
	}
	if c.window == 0 {
		c.window = contract.HLCWindow
	}
	if c.renewBefore == 0 {
		c.renewBefore = contract.HLCRenewBefore
	}
	if c.backoffMin == 0 && c.backoffMax == 0 {
		c.backoffMin, c.backoffMax = 100*time.Millisecond, 2*time.Second
	}
	switch {
	case c.window < time.Millisecond || c.window%time.Millisecond != 0:
		return fmt.Errorf("identity: window %v must be a positive whole number of milliseconds", c.window)
	case c.renewBefore < time.Millisecond || c.renewBefore >= c.window:
		return fmt.Errorf("identity: renew-before %v must be in [1ms, window %v)", c.renewBefore, c.window)
	case c.backoffMin <= 0 || c.backoffMax < c.backoffMin:
		return fmt.Errorf("identity: retry backoff [%v, %v] is empty", c.backoffMin, c.backoffMax)
	case c.lease != nil && (c.lease.Region() != region || c.lease.WriterID() != writer):
		return fmt.Errorf("identity: lease is for region %d writer_id %d, issuer for region %d writer_id %d",
			c.lease.Region(), c.lease.WriterID(), region, writer)
	}
	return nil
}

// pollInterval is how often Run checks whether a claim is due: the check reads an injectable
// clock, so it polls rather than sleeping until a computed instant. An eighth of renew-before
// (capped at 1s) leaves ample time for several claim attempts inside the renewal margin.
func (c *issuerConfig) pollInterval() time.Duration {
	return min(max(c.renewBefore/8, time.Millisecond), time.Second)
}

// attemptTimeout bounds one claim round trip so a hung connection cannot eat the margin.
func (c *issuerConfig) attemptTimeout() time.Duration {
	return min(max(c.renewBefore/4, 10*time.Millisecond), 5*time.Second)
}
