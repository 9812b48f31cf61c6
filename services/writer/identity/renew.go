package identity

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/qim-dev/qim/services/internal/backoff"
)

// claimIDs names claim attempts: <random tag>:<sequence>. A retry after a transport error
// reuses the pending id, so claim_window.lua returns the window it may already have persisted
// instead of burning another one (and pushing the high-water mark ahead of wall time).
type claimIDs struct {
	tag     string
	seq     uint64
	pending bool
	buf     []byte
}

// current returns the id to send: the pending one on a retry, a fresh one otherwise.
func (c *claimIDs) current() string {
	if !c.pending {
		c.seq++
		c.pending = true
	}
	c.buf = append(append(c.buf[:0], c.tag...), ':')
	c.buf = strconv.AppendUint(c.buf, c.seq, 10)
	return string(c.buf)
}

// settle marks the pending id as answered by Redis; the next claim gets a fresh id.
func (c *claimIDs) settle() { c.pending = false }

// Run keeps windows ahead of the HLC until ctx ends (returns ctx.Err()) or the lease is lost
// (returns its ErrLeaseLost error). A failed claim is retried with backoff and reported to the
// WithClaimErrorHook; it never returns on Redis errors, because Next already refuses ids safely
// when the last window runs out and the next successful claim resumes issuing.
func (i *Issuer) Run(ctx context.Context) error {
	poll := i.cfg.pollInterval()
	delay := backoff.New(i.cfg.backoffMin, i.cfg.backoffMax)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-i.lost:
			return i.cfg.lease.Err()
		case <-timer.C:
		}
		if !i.renewalDue() {
			timer.Reset(poll)
			continue
		}
		if err := i.claimNext(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if i.cfg.onClaimError != nil {
				i.cfg.onClaimError(err)
			}
			timer.Reset(delay.Next())
			continue
		}
		delay.Reset()
		timer.Reset(poll)
	}
}

func (i *Issuer) renewalDue() bool {
	now := i.cfg.now().UnixMilli()
	i.mu.Lock()
	defer i.mu.Unlock()
	i.clock.Advance(now)
	return i.clock.NeedsRenewal(now)
}

func (i *Issuer) claimNext(ctx context.Context) error {
	i.claimMu.Lock()
	defer i.claimMu.Unlock()
	if err := i.leaseErr(); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, i.cfg.attemptTimeout())
	defer cancel()
	return i.claimAndInstall(actx)
}

// claimAndInstall claims one window above the installed horizon and installs it. Caller holds
// claimMu. The window is installed only after Redis replied with it: an unanswered claim may
// have persisted, which is why its id is reused on retry, but it is never used unconfirmed.
func (i *Issuer) claimAndInstall(ctx context.Context) error {
	i.mu.Lock()
	floor := i.clock.Horizon()
	i.mu.Unlock()
	now := i.cfg.now().UnixMilli()
	res, err := claimWindowScript.Do(ctx, i.rdb, &claimWindowArgs{HLC: i.hlcKey, NowMs: now,
		WindowMs: i.cfg.window.Milliseconds(), FloorMs: int64(floor), ClaimID: i.claimer.current()})
	if err != nil {
		return fmt.Errorf("identity: claim hlc window %s: %w", i.hlcKey, err)
	}
	i.claimer.settle()
	if res.Start < 1 || res.Finish <= res.Start {
		return fmt.Errorf("identity: claim hlc window %s: malformed reply %+v", i.hlcKey, res)
	}
	w := Window{Start: uint64(res.Start), End: uint64(res.Finish)}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.clock.Advance(i.cfg.now().UnixMilli())
	if err := i.clock.Install(w); err != nil {
		return fmt.Errorf("identity: claim hlc window %s: %w", i.hlcKey, err)
	}
	return nil
}
