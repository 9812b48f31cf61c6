package mailbox

import (
	"context"
	"log/slog"
	"sync"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/presence"
)

// pushDirectory sends each push target to the gateways that hold an online device of its user,
// as the owned partitions of qim.presence say (ADR-0027), one pusher (stream and queue) per
// gateway.
//
// Invariants: enqueue never blocks and makes no remote call (the seed's zero synchronous calls
// on the push path: the directory is in memory, fed by the follower); a target for a user no
// gateway holds is not pushed (counted as reason="offline"), which loses nothing, since the
// device pulls when it connects; a gateway's pusher lives as long as the node (a restarted
// gateway keeps its address, and gRPC's channel idles when unused).
//
// How: one RWMutex. The follower's goroutine applies entries under the write lock and creates
// the pusher of a gateway it sees for the first time; shard workers route under the read lock.
//
// Rejected: a Directory per shard without a lock. Boot announcements reach every partition, so
// each shard would hold every gateway's boots, and pushers would still be shared.
type pushDirectory struct {
	mu      sync.RWMutex
	dir     *presence.Directory
	pushers map[string]*pusher
	conns   []*grpc.ClientConn

	ctx   context.Context // run's: pushers live in it
	wg    sync.WaitGroup
	dial  func(addr string) (*grpc.ClientConn, error)
	depth int
	m     *metrics
	log   *slog.Logger
}

func newPushDirectory(dial func(string) (*grpc.ClientConn, error), depth int, m *metrics, log *slog.Logger) *pushDirectory {
	return &pushDirectory{dir: presence.New(), pushers: map[string]*pusher{}, dial: dial, depth: depth, m: m, log: log}
}

// run follows qim.presence until ctx ends or the follower fails, then stops the pushers and
// closes their channels.
func (d *pushDirectory) run(ctx context.Context, f interface{ Run(context.Context) error }) error {
	pctx, stop := context.WithCancel(ctx)
	d.mu.Lock()
	d.ctx = pctx
	d.mu.Unlock()
	err := f.Run(ctx)
	stop() // a failed follower returns with ctx still live: the pushers must end before Wait
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cc := range d.conns {
		_ = cc.Close()
	}
	return err
}

// apply folds the follower's entries into the directory (the Follower's Apply hook).
func (d *pushDirectory) apply(entries []presence.Entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range entries {
		if d.dir.Apply(e) {
			d.m.presenceApplied.Inc()
		}
		if e.Online && d.pushers[e.Gateway] == nil {
			d.startPusher(e.Gateway)
		}
	}
}

// startPusher runs under the write lock, on the follower's goroutine: after ctx ended (the node
// is stopping) no pusher starts.
func (d *pushDirectory) startPusher(addr string) {
	if d.ctx == nil || d.ctx.Err() != nil {
		return
	}
	cc, err := d.dial(addr)
	if err != nil { // grpc.NewClient fails only on a malformed target, which no gateway publishes
		d.log.Warn("mailbox: cannot create a push client for a gateway in qim.presence", "gateway", addr, "err", err)
		return
	}
	d.conns = append(d.conns, cc)
	p := newPusher(internalv1.NewPushClient(cc), d.depth, d.m, d.log.With("gateway", addr))
	d.pushers[addr] = p
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_ = p.run(d.ctx) // returns nil: pushes are best effort
	}()
}

// enqueue is the shard workers' push function.
func (d *pushDirectory) enqueue(targets []*internalv1.PushTarget) {
	var buf [4]string
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, t := range targets {
		tenant, err := contract.U128FromBytes(t.GetTenantId())
		if err != nil {
			d.m.pushDropped.WithLabelValues("invalid").Inc()
			continue
		}
		gws := d.dir.Gateways(buf[:0], tenant, contract.UserID(t.GetUserId()))
		if len(gws) == 0 {
			d.m.pushDropped.WithLabelValues("offline").Inc()
			continue
		}
		for _, g := range gws {
			if p := d.pushers[g]; p != nil {
				p.enqueue1(t)
			} else {
				d.m.pushDropped.WithLabelValues("no_client").Inc()
			}
		}
	}
}

// queued is how many targets wait in all pushers (the queue depth gauge).
func (d *pushDirectory) queued() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	n := 0
	for _, p := range d.pushers {
		n += len(p.q)
	}
	return n
}

// stats are the directory gauges: users held and gateways known.
func (d *pushDirectory) stats() (users, gateways int) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.dir.Users(), len(d.pushers)
}
