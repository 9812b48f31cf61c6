package gateway

import (
	"context"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// writerPool routes to the ConversationWriter instances of QIM_WRITER_ADDRS.
//
// Invariants: a conversation goes to the reachable instance with the highest
// contract.WriterRendezvous score, so every gateway sends a conversation to the same writer
// while the same instances are up, and losing one moves only its conversations; routing is
// affinity only — any writer commits any conversation correctly, because conversation_seq and
// the idempotency record are assigned atomically in the core Redis — so a fallback needs no
// compensation and a retry of an outcome-unknown SEND is safe on whichever writer takes it.
//
// How: an instance is down from the moment one of its streams ends with UNAVAILABLE (the
// reader's EOF, which is seen at once, not at the next write) or its channel reports
// TRANSIENT_FAILURE, until its channel is READY again; one watcher goroutine per instance keeps
// the channel connecting and clears the mark. With every instance down, the best-ranked one is
// used anyway and its error goes to the client (UNAVAILABLE, retryable).
//
// Rejected: a per-call health check or a probe RPC. It costs a round trip per SEND and still
// races the crash; the stream's own EOF is the earliest signal there is.
type writerPool struct {
	addrs   []string
	ccs     []*grpc.ClientConn
	clients []internalv1.WriterClient
	down    []atomic.Bool
	onDown  func(i int) // counts a fallback-causing loss; nil in tests
}

func newWriterPool(addrs []string, ccs []*grpc.ClientConn) *writerPool {
	p := &writerPool{addrs: addrs, ccs: ccs, down: make([]atomic.Bool, len(addrs))}
	for _, cc := range ccs {
		p.clients = append(p.clients, internalv1.NewWriterClient(cc))
	}
	return p
}

// best is the instance with the highest score for a conversation among those up accepts, or
// the best of all when up accepts none. Ties (never seen with a 64-bit hash of distinct
// addresses) go to the earlier entry, so every gateway agrees. One pass, no allocation: it runs
// per SEND.
func best(addrs []string, tenant contract.TenantID, conv contract.ConversationID, up func(int) bool) int {
	top, topScore, live, liveScore := 0, uint64(0), -1, uint64(0)
	for i, a := range addrs {
		sc := contract.WriterRendezvous(tenant, conv, a)
		if i == 0 || sc > topScore {
			top, topScore = i, sc
		}
		if (live < 0 || sc > liveScore) && up(i) {
			live, liveScore = i, sc
		}
	}
	if live < 0 {
		return top
	}
	return live
}

// userRoute is the routing key of writer calls whose conversation the gateway does not peek at
// (history pulls, group requests): any writer serves them, and keying by user keeps one user's
// calls on one instance while spreading users.
func userRoute(u contract.UserID) contract.ConversationID {
	return contract.ConversationID{Lo: uint64(u)}
}

// pick is the instance a conversation's calls go to now.
func (p *writerPool) pick(tenant contract.TenantID, conv contract.ConversationID) int {
	if len(p.addrs) == 1 {
		return 0
	}
	return best(p.addrs, tenant, conv, p.up)
}

func (p *writerPool) up(i int) bool {
	st := p.ccs[i].GetState()
	if st == connectivity.TransientFailure || st == connectivity.Shutdown {
		return false
	}
	return st == connectivity.Ready || !p.down[i].Load()
}

// client is the Writer client for a conversation.
func (p *writerPool) client(tenant contract.TenantID, conv contract.ConversationID) internalv1.WriterClient {
	return p.clients[p.pick(tenant, conv)]
}

// lost marks instance i down after one of its calls failed in a way that says the instance, not
// the request, is gone.
func (p *writerPool) lost(i int, err error) {
	if status.Code(err) != codes.Unavailable || errors.Is(err, context.Canceled) {
		return
	}
	if !p.down[i].Swap(true) && p.onDown != nil {
		p.onDown(i)
	}
}

// watch keeps instance i's channel connecting while it is down and clears the mark once it is
// READY again. It returns when ctx ends or the channel shuts down.
func (p *writerPool) watch(ctx context.Context, i int) {
	cc := p.ccs[i]
	for {
		st := cc.GetState()
		switch st {
		case connectivity.Ready:
			p.down[i].Store(false)
		case connectivity.TransientFailure:
			if !p.down[i].Swap(true) && p.onDown != nil {
				p.onDown(i)
			}
		case connectivity.Idle:
			if p.down[i].Load() {
				cc.Connect() // a down instance is probed by the channel's own backoff, not by a SEND
			}
		case connectivity.Shutdown:
			return
		}
		if !cc.WaitForStateChange(ctx, st) {
			return
		}
	}
}

// anyReady reports nil once at least one instance's channel is READY: with one writer left a
// gateway still commits every conversation. Called by /healthz only, so a goroutine per
// instance per check is no concern.
func (p *writerPool) anyReady(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan error, len(p.ccs))
	for i, cc := range p.ccs {
		go func() { res <- waitBackendReady(ctx, "writer "+p.addrs[i], cc) }()
	}
	var errs []error
	for range p.ccs {
		err := <-res
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
