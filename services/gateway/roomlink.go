package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/backoff"
)

// errLinkDown is returned for a join while the link to the room's RoomWriter is not up.
var errLinkDown = errors.New("gateway: room link down")

// roomLink is the gateway's one RoomWriter.Link stream to one RoomWriter instance.
//
// Invariants: joins and leaves are sent in the order queued, by one sender goroutine, so the
// read loop and the hub never block on the stream; a message queued for one generation of the
// stream is never sent on a later one (a leave of a membership the old stream granted would
// cancel one the new stream granted); when the stream ends, the generation ends first, then the
// hub fails what it held (linkLost), then a new stream is dialled.
//
// Rejected: failing over a room to another RoomWriter while its owner is down. Room ownership is
// contract.RoomOwner over the configured list; a gateway that moved a room alone would split it
// into two room_seq sequences.
type roomLink struct {
	addr   string
	client internalv1.RoomWriterClient
	hub    *roomHub
	name   string // this gateway, for the RoomWriter's logs
	m      *metrics
	log    *slog.Logger

	mu     sync.Mutex
	gen    uint64 // current stream generation; 0 while down
	nextGn uint64
	queue  []*internalv1.RoomLinkUp
	wake   chan struct{}
}

func newRoomLink(addr string, cc grpc.ClientConnInterface, hub *roomHub, name string, m *metrics, log *slog.Logger) *roomLink {
	return &roomLink{addr: addr, client: internalv1.NewRoomWriterClient(cc), hub: hub, name: name, m: m, log: log,
		wake: make(chan struct{}, 1)}
}

// join queues a RoomJoinCall for sub and stamps sub with the generation it goes out on.
func (l *roomLink) join(sub *roomSub, replayFrom *uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gen == 0 {
		return fmt.Errorf("%w: %s", errLinkDown, l.addr)
	}
	sub.gen = l.gen
	l.pushLocked(&internalv1.RoomLinkUp{Op: &internalv1.RoomLinkUp_Join{Join: &internalv1.RoomJoinCall{
		CallId: sub.callID, TenantId: tenantBytes(sub.key.tenant), RoomId: sub.roomID, UserId: uint64(sub.user),
		ReplayFromRoomSeq: replayFrom}}})
	return nil
}

// leave queues a RoomLeaveCall for a membership granted on sub.gen; a membership of an ended
// generation ended with it, and nothing is sent.
func (l *roomLink) leave(sub *roomSub) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sub.gen != l.gen || l.gen == 0 {
		return
	}
	l.pushLocked(&internalv1.RoomLinkUp{Op: &internalv1.RoomLinkUp_Leave{Leave: &internalv1.RoomLeaveCall{
		TenantId: tenantBytes(sub.key.tenant), RoomId: sub.roomID, UserId: uint64(sub.user)}}})
}

func (l *roomLink) pushLocked(up *internalv1.RoomLinkUp) {
	l.queue = append(l.queue, up)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func tenantBytes(t contract.TenantID) []byte {
	b := t.Bytes()
	return b[:]
}

// run keeps a stream to the RoomWriter until ctx ends, redialling with backoff capped at 1 s:
// until the stream is back, the RoomWriter's rooms are dead to this gateway's members (joins
// and rejoins refused UNAVAILABLE), so a cap of several seconds would add that much outage
// after every restart (the chaos cell room-writer-kill saw 5.7 s with a 5 s cap), while a
// redial costs one stream attempt per second per gateway (the channel's own reconnects are
// capped at 2 s, dialBackend).
func (l *roomLink) run(ctx context.Context) {
	b := backoff.New(100*time.Millisecond, time.Second)
	for ctx.Err() == nil {
		err := l.serve(ctx, b)
		if ctx.Err() != nil {
			return
		}
		l.m.roomLinkLost.Inc()
		l.log.Warn("gateway: room link lost; members were told ROOM_LEFT UNAVAILABLE", "room_writer", l.addr, "err", err)
		if !b.Wait(ctx) {
			return
		}
	}
}

// serve runs one stream generation: open, hello, then send queued calls and apply what comes
// down until either side fails.
func (l *roomLink) serve(ctx context.Context, b *backoff.Backoff) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := l.client.Link(sctx)
	if err == nil {
		err = stream.Send(&internalv1.RoomLinkUp{Op: &internalv1.RoomLinkUp_Hello{Hello: &internalv1.RoomLinkHello{Gateway: l.name}}})
	}
	if err != nil {
		return fmt.Errorf("gateway: room link %s: %w", l.addr, err)
	}
	gen := l.open()
	defer l.close(gen)
	sent := make(chan error, 1)
	go func() {
		err := l.sendLoop(sctx, stream, gen)
		cancel() // a failed Send ends the Recv below too
		sent <- err
	}()
	for {
		down, err := stream.Recv()
		if err != nil {
			cancel()
			if serr := <-sent; serr != nil && !errors.Is(serr, context.Canceled) {
				err = errors.Join(err, serr) // the send side's failure is often the cause
			}
			return fmt.Errorf("gateway: room link %s: %w", l.addr, err)
		}
		b.Reset() // the RoomWriter answered: it is up
		for _, it := range down.GetItems() {
			switch x := it.GetItem().(type) {
			case *internalv1.RoomLinkItem_Joined:
				l.hub.answered(l, gen, x.Joined)
			case *internalv1.RoomLinkItem_Events:
				l.hub.broadcast(l, x.Events)
			case *internalv1.RoomLinkItem_Removed:
				l.hub.removed(l, gen, x.Removed)
			}
		}
	}
}

// open starts a new generation with an empty queue.
func (l *roomLink) open() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextGn++
	l.gen, l.queue = l.nextGn, nil
	return l.gen
}

// close ends generation gen: nothing more is queued for it, and the hub fails what it held.
func (l *roomLink) close(gen uint64) {
	l.mu.Lock()
	l.gen, l.queue = 0, nil
	l.mu.Unlock()
	l.hub.linkLost(l, gen)
}

// sendLoop sends what is queued for gen, in order, until the stream fails or ctx ends.
func (l *roomLink) sendLoop(ctx context.Context, stream internalv1.RoomWriter_LinkClient, gen uint64) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.wake:
		}
		l.mu.Lock()
		if l.gen != gen {
			l.mu.Unlock()
			return nil
		}
		batch := l.queue
		l.queue = nil
		l.mu.Unlock()
		for _, up := range batch {
			if err := stream.Send(up); err != nil {
				return err
			}
		}
	}
}
