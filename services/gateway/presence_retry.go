package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/presence"
)

// presenceRetries holds the sessions whose online entry did not reach qim.presence, until a
// republished entry does or the session ends.
//
// Why: a MailboxNode pushes only to devices the directory says are online; a device whose
// online entry was lost gets no push until it logs in again, so its messages wait for a pull it
// has no reason to make. The chaos matrix found it: clients that reconnected to a gateway
// restarted while the broker was unreachable had their online entries time out, and their
// mailboxes held acknowledged messages without a delivery for the rest of the cell (STALLED).
//
// Invariants: a session's entries reach the producer in the order online, offline — a
// republished online entry is enqueued only while the session is still registered, under order,
// and the offline entry of a session is enqueued under order too, after its unregister; at most
// one republished entry of a session is in flight.
//
// Rejected: republishing every registered session whenever the follower restarts. An entry can
// fail while the follower reads fine (one produce timing out), and the full set costs a record
// per device per restart on a gateway with a million connections.
type presenceRetries struct {
	order sync.Mutex // held while a session's entry is enqueued (see the invariants)

	mu       sync.Mutex
	sessions map[*session]bool // true while a republished entry is in flight
}

// failed records that sess's online entry was lost.
func (r *presenceRetries) failed(sess *session) {
	r.mu.Lock()
	if r.sessions == nil {
		r.sessions = map[*session]bool{}
	}
	r.sessions[sess] = false
	r.mu.Unlock()
}

// done ends sess's retries (its entry arrived, or it went offline).
func (r *presenceRetries) done(sess *session) {
	r.mu.Lock()
	delete(r.sessions, sess)
	r.mu.Unlock()
}

// due lists the sessions to republish now (none in flight) and marks them in flight.
func (r *presenceRetries) due() []*session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*session
	for s, inflight := range r.sessions {
		if !inflight {
			r.sessions[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (r *presenceRetries) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// republishLoop republishes lost online entries every presenceRetry until ctx ends.
func (p *presenceNode) republishLoop(ctx context.Context) error {
	t := time.NewTicker(presenceRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, sess := range p.retries.due() {
			p.republish(ctx, sess)
		}
	}
}

// republish enqueues sess's online entry again if sess is still its device's registered session.
func (p *presenceNode) republish(ctx context.Context, sess *session) {
	p.retries.order.Lock()
	defer p.retries.order.Unlock()
	if !p.s.registry.registered(sess) {
		p.retries.done(sess)
		return
	}
	e := p.entry(sess, true)
	v, err := presence.Encode(e, time.Now())
	if err != nil { // the first publish encoded the same entry: this cannot clear by retrying
		p.log.Error("gateway: presence entry not republished", "err", err)
		p.count("online", err)
		p.retries.done(sess)
		return
	}
	p.prod.Produce(context.WithoutCancel(ctx), commitlog.Record{Partition: presence.Partition(p.shards, e), Key: presence.Key(e), Value: v},
		func(err error) {
			p.count("online", err)
			if err != nil {
				p.retries.failed(sess) // due again on the next tick
				return
			}
			p.entries.WithLabelValues("online", "republished").Inc()
			p.retries.done(sess)
		})
}
