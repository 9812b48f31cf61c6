package gates

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/e2e"
)

// Gate 6 defaults (harness tuning, not contract values).
const (
	theavySamples   = 300             // first-screen requests measured; the SLO needs at least 200
	theavyMinSample = 200             // fewer measured requests cannot support a P99
	theavyWorkers   = 50              // concurrent peer connections while building
	theavyBuildWait = 3 * time.Minute // bound on the projection catching up with the build
	theavyChurn     = 25              // one new message from a peer every this many samples
)

// theavyGate is gate 6, T-HEAVY: a user with contract.THeavyConversations conversations, built
// through the real write path (every peer logs in through the gateway and sends one message,
// each with a fresh client_message_id), whose first screen of PULL_SESSION_LIST must stay under
// contract.SLOSessionFirstP99 at P99.
//
// Invariants: the measured user is fresh each run (no earlier run's state helps it); the list is
// counted by paging through it, not trusted from a metric; the P99 comes from at least 200
// requests, and every measured first screen must be a full page, so a fast empty answer cannot
// pass. While measuring, a peer keeps writing to its conversation, so the snapshot refresh path
// (not only a cached snapshot) is part of what is measured.
//
// Rejected: seeding Redis directly with 5,000 rows. It would measure a list the write path never
// produced (no projection, no history heads), which is exactly what this gate must not assume.
type theavyGate struct {
	conversations int
	samples       int
	workers       int
	buildWait     time.Duration
	slo           time.Duration
	// target returns the scenario environment; nil uses the run's deployment.
	target func(ctx context.Context, env *Env) (*e2e.Env, error)
}

func (theavyGate) Name() string  { return "theavy" }
func (theavyGate) Title() string { return "T-HEAVY: 5,000-conversation session list first screen" }

func (g theavyGate) withDefaults() theavyGate {
	if g.conversations == 0 {
		g.conversations = contract.THeavyConversations
	}
	if g.samples == 0 {
		g.samples = theavySamples
	}
	if g.workers == 0 {
		g.workers = theavyWorkers
	}
	if g.buildWait == 0 {
		g.buildWait = theavyBuildWait
	}
	if g.slo == 0 {
		g.slo = contract.SLOSessionFirstP99
	}
	if g.target == nil {
		g.target = deploymentTarget
	}
	return g
}

// deploymentTarget is the run's deployment, as gate 4 uses it.
func deploymentTarget(ctx context.Context, env *Env) (*e2e.Env, error) {
	set, st, err := env.deployedStack(ctx)
	if err != nil {
		return nil, err
	}
	ep := st.Endpoints()
	return e2e.NewEnv(set.Addrs.GatewayTCP, []byte(set.Addrs.TokenSecret), ep.KafkaBrokers, ep.DispatchShards, set), nil
}

func (g theavyGate) Run(ctx context.Context, env *Env, r *Result) {
	g = g.withDefaults()
	e, err := g.target(ctx, env)
	if err != nil {
		r.Fail(err)
		return
	}
	heavy := e.User()
	start := time.Now()
	peers, err := g.build(ctx, env, e, heavy)
	r.Metric("build_seconds", time.Since(start).Seconds())
	if err != nil {
		r.Fail(err)
		return
	}
	c, _, err := e.Login(ctx, heavy, "theavy-heavy", 0)
	if err != nil {
		r.Fail(err)
		return
	}
	defer c.Close()
	n, err := g.waitList(ctx, env, c)
	r.Metric("conversations", float64(n))
	if !r.Check("conversations", err == nil && n == g.conversations, "list holds %d conversations, want %d (%v)", n, g.conversations, err) {
		return
	}
	h, full, err := g.measure(ctx, e, c, heavy, peers[0])
	if err != nil {
		r.Fail(err)
		return
	}
	p50, p99, mx := ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.Max())
	r.Metric("samples", float64(h.TotalCount()))
	r.Metric("first_screen_p50_ms", p50)
	r.Metric("first_screen_p99_ms", p99)
	r.Metric("first_screen_max_ms", mx)
	env.Progressf("first screen over %d requests: P50 %.2f ms, P99 %.2f ms, max %.2f ms", h.TotalCount(), p50, p99, mx)
	r.Check("samples", h.TotalCount() >= theavyMinSample, "%d first-screen requests measured (need ≥ %d)", h.TotalCount(), theavyMinSample)
	r.Check("first screen complete", full == int(h.TotalCount()), "%d of %d first screens were a full page with more to follow",
		full, h.TotalCount())
	r.Check("first screen P99", time.Duration(p99*float64(time.Millisecond)) <= g.slo, "P99 %.2f ms (SLO %s); P50 %.2f ms, max %.2f ms",
		p99, g.slo, p50, mx)
}

func ms(us int64) float64 { return float64(us) / 1000 }

// build makes every peer log in and send one message to heavy, g.workers at a time. It returns
// the peers in order.
func (g theavyGate) build(ctx context.Context, env *Env, e *e2e.Env, heavy contract.UserID) ([]contract.UserID, error) {
	peers := make([]contract.UserID, g.conversations)
	for i := range peers {
		peers[i] = e.User()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan contract.UserID)
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < g.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := sendOnce(ctx, e, p, heavy); err != nil {
					cancel(fmt.Errorf("gates: theavy: peer %d: %w", p, err))
					return
				}
				if n := done.Add(1); n%1000 == 0 || int(n) == len(peers) {
					env.Progressf("built %d/%d conversations", n, len(peers))
				}
			}
		}()
	}
feed:
	for _, p := range peers {
		select {
		case work <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return peers, nil
}

// sendOnce logs peer in and sends one message to heavy, retrying a transient failure twice (a
// retry with the same client_message_id is idempotent, so it cannot create a second message).
func sendOnce(ctx context.Context, e *e2e.Env, peer, heavy contract.UserID) error {
	cmid := e2e.NewCmid()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var c *e2e.Client
		if c, _, err = e.Login(ctx, peer, "theavy", 0); err == nil {
			_, err = c.Send(ctx, heavy, cmid, []byte("hello heavy user"))
			c.Close()
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// waitList pages through the heavy user's list until it holds every conversation or the bound
// passes; it returns the last count.
func (g theavyGate) waitList(ctx context.Context, env *Env, c *e2e.Client) (int, error) {
	deadline := time.Now().Add(g.buildWait)
	last := -1
	for {
		list, err := c.SessionList(ctx, 100)
		if err != nil {
			return last, err
		}
		if len(list) == g.conversations {
			return len(list), nil
		}
		if len(list) != last {
			env.Progressf("session list shows %d/%d conversations", len(list), g.conversations)
			last = len(list)
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("gates: theavy: list stuck at %d conversations after %s", last, g.buildWait)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// measure times g.samples first screens (server default page size). Every theavyChurn samples
// a peer sends one more message to its existing conversation, so refreshes are measured too.
// full counts answers that were a full page with more rows after it.
func (g theavyGate) measure(ctx context.Context, e *e2e.Env, c *e2e.Client, heavy, churner contract.UserID) (*hdrhistogram.Histogram, int, error) {
	h := hdrhistogram.New(1, 60_000_000, 3)
	pc, _, err := e.Login(ctx, churner, "theavy-churn", 0)
	if err != nil {
		return nil, 0, err
	}
	defer pc.Close()
	full, page := 0, -1
	for i := 0; i < g.samples; i++ {
		if i > 0 && i%theavyChurn == 0 {
			if _, err := pc.Send(ctx, heavy, e2e.NewCmid(), []byte("still here")); err != nil {
				return nil, 0, fmt.Errorf("gates: theavy: churn send: %w", err)
			}
		}
		t := time.Now()
		b, err := c.PullSessionList(ctx, nil, 0)
		if err != nil {
			return nil, 0, fmt.Errorf("gates: theavy: first screen %d: %w", i, err)
		}
		_ = h.RecordValue(max(time.Since(t).Microseconds(), 1))
		if page < 0 {
			page = len(b.GetSessions())
		}
		if len(b.GetSessions()) == page && page > 0 && (b.GetHasMore() || page == g.conversations) {
			full++
		}
	}
	if full == 0 {
		return h, 0, errors.New("gates: theavy: no first screen had any rows")
	}
	return h, full, nil
}
