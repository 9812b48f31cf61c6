package room

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// Reasons a link ended (the reason label of qim_room_links_ended_total).
const (
	endSlow   = "slow"   // its queue was full
	endClosed = "closed" // the gateway closed it, or this process is stopping
	endError  = "error"  // the stream broke
)

// errLinkEnded stops a link's receiver once the link ended (it overflowed): calls after that
// would only be refused.
var errLinkEnded = errors.New("room: link ended")

// grpcServer adapts the Service to the generated RoomWriter service. A Publish answers either an
// ack or a contract error code; a Go error is returned to gRPC only for transport failures, so
// the gateway can tell "refused" from "unreachable".
type grpcServer struct {
	internalv1.UnimplementedRoomWriterServer
	s *Service
}

func (g grpcServer) Publish(ctx context.Context, in *internalv1.RoomPublish) (*internalv1.RoomPublishOutcome, error) {
	ack, wait, err := g.s.publish(ctx, in)
	if err != nil {
		return &internalv1.RoomPublishOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err),
			RetryAfterMs: uint32((wait + time.Millisecond - 1) / time.Millisecond), ErrorReason: rpc.ReasonOf(err)}, nil
	}
	return &internalv1.RoomPublishOutcome{Ack: ack}, nil
}

func (g grpcServer) Moderate(_ context.Context, in *internalv1.RoomModeration) (*internalv1.RoomModerationOutcome, error) {
	info, err := g.s.moderate(in)
	g.s.m.moderations.WithLabelValues(moderationAction(in)).Inc()
	if err != nil {
		return &internalv1.RoomModerationOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}, nil
	}
	return &internalv1.RoomModerationOutcome{Info: info}, nil
}

func (g grpcServer) Link(stream internalv1.RoomWriter_LinkServer) error {
	return g.s.serveLink(stream)
}

// serveLink runs one gateway's link until it ends: a receiver goroutine applies joins and leaves,
// and this goroutine is the link's only sender. Whatever ends it, the link's memberships are
// removed from every room before the handler returns.
//
// The receiver outlives the handler by a moment: gRPC unblocks its Recv only once the handler
// returned. It is counted in s.recvs, which the process waits for before it exits, and it stops
// applying calls once the link ended (link.admit refuses), so it cannot leave a membership behind.
func (s *Service) serveLink(stream internalv1.RoomWriter_LinkServer) error {
	l := s.openLink()
	recvDone := make(chan error, 1)
	s.recvs.Add(1)
	go func() {
		defer s.recvs.Done()
		recvDone <- s.receive(l, stream)
	}()
	reason, err := s.sendLoop(stream, l, recvDone)
	s.closeLink(l, reason, err)
	return err
}

// openLink is a new link with the configured queue bound, counted open.
func (s *Service) openLink() *link {
	s.m.links.Inc()
	return newLink(s.nextLink.Add(1), s.cfg.LinkQueue, &s.queued)
}

// closeLink ends l and removes its joined connections from every room, then counts the end.
func (s *Service) closeLink(l *link, reason string, err error) {
	for r := range l.end() {
		r.dropLink(l) // never dead: a room with a joined connection is not swept
	}
	s.m.links.Dec()
	s.m.linksEnded.WithLabelValues(reason).Inc()
	if reason != endClosed {
		s.log.Warn("room: link ended", "link", l.id, "gateway", l.name(), "reason", reason, "err", err)
	}
}

// sendLoop sends what the rooms queue on l until the link must end, and says why. A slow link
// ends with RESOURCE_EXHAUSTED: the gateway then tells its connections ROOM_LEFT UNAVAILABLE
// and they rejoin with replay. Its queue usually overflows while this goroutine is blocked in a
// Send (flow control): the status goes out once that Send returns (the gateway read, or the
// keepalive found it dead); meanwhile the ended link holds no queue and takes nothing more.
func (s *Service) sendLoop(stream internalv1.RoomWriter_LinkServer, l *link, recvDone <-chan error) (string, error) {
	ctx := stream.Context()
	var buf []linkItem
	slowEnd := func() (string, error) {
		return endSlow, status.Errorf(codes.ResourceExhausted,
			"room: link queue full (%d items): the gateway read too slowly; rejoin its rooms with replay", s.cfg.LinkQueue)
	}
	for {
		select {
		case <-l.slow:
			return slowEnd()
		case err := <-recvDone:
			switch {
			case errors.Is(err, errLinkEnded):
				return slowEnd() // the receiver saw the overflow first; it is the only way a link ends early
			case err == nil:
				return endClosed, nil
			case status.Code(err) == codes.Canceled:
				return endClosed, err
			}
			return endError, err
		case <-ctx.Done():
			return endClosed, status.FromContextError(ctx.Err()).Err()
		case <-s.stopping:
			return endClosed, status.Error(codes.Unavailable, "room: the RoomWriter is stopping; its rooms' buffers are lost")
		case <-l.wake:
		}
		buf = l.take(buf)
		if err := s.send(stream, buf); err != nil {
			return endError, fmt.Errorf("room: link %d send: %w", l.id, err)
		}
		clear(buf) // drop the references to sent events
	}
}

// receive applies the gateway's calls in order until the stream ends (nil for the gateway's
// orderly close) or the link ended (errLinkEnded).
func (s *Service) receive(l *link, stream internalv1.RoomWriter_LinkServer) error {
	for {
		up, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("room: link %d receive: %w", l.id, err)
		}
		if l.isEnded() {
			return errLinkEnded
		}
		switch op := up.GetOp().(type) {
		case *internalv1.RoomLinkUp_Hello:
			name := op.Hello.GetGateway()
			l.gateway.Store(&name)
			s.log.Info("room: link opened", "link", l.id, "gateway", name)
		case *internalv1.RoomLinkUp_Join:
			s.join(l, op.Join)
		case *internalv1.RoomLinkUp_Leave:
			s.leave(l, op.Leave)
		default:
			// A newer gateway's call this build does not know: skipping it is all it can do,
			// and its answer (if any) never comes, which that gateway must already tolerate.
			s.m.unknownCalls.Inc()
		}
	}
}
