package writer

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/qim-dev/qim/services/internal/rpc"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// grpcServer adapts the Service to the generated Writer service.
type grpcServer struct {
	internalv1.UnimplementedWriterServer
	s *Service
}

// SendStream serves one gateway connection's sends.
//
// Invariant: at most InflightPerConn sends of this stream are between Recv and their answer. The
// permit is taken BEFORE Recv, so at the limit the writer simply stops reading; HTTP/2 flow
// control then stops the gateway, which stops reading its clients (TCP back-pressure). Nothing
// queues where no metric can see it. Answers go to a channel with room for every permit, written
// by one goroutine that owns stream.Send, so an answer never blocks the commit pipeline.
func (g grpcServer) SendStream(stream internalv1.Writer_SendStreamServer) error {
	s := g.s
	limit := s.cfg.InflightPerConn
	permits := make(chan struct{}, limit)
	answers := make(chan *internalv1.SendOutcome, limit)
	var sendErr error
	var wg sync.WaitGroup
	quit := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case o, ok := <-answers:
				if !ok {
					return
				}
				if sendErr == nil {
					sendErr = stream.Send(o)
				}
			case <-quit:
				return
			}
		}
	}()
	var order *sendOrder
	if s.hook != nil {
		order = newSendOrder(limit)
	}
	recvErr := g.readLoop(stream, permits, answers, order)
	order.close()
	if drainPermits(permits, limit, s.done) {
		close(answers)
	} else {
		// The pipeline stopped: answers that still come land in the channel's room (one slot
		// per permit) and are dropped with it; it is never closed under a late writer.
		close(quit)
	}
	wg.Wait()
	if recvErr != nil {
		return recvErr
	}
	return sendErr
}

func (g grpcServer) readLoop(stream internalv1.Writer_SendStreamServer, permits chan struct{}, answers chan *internalv1.SendOutcome, order *sendOrder) error {
	s, ctx := g.s, stream.Context()
	for {
		waitStart := time.Now()
		select {
		case permits <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		s.m.permitWait.Observe(time.Since(waitStart).Seconds())
		in, err := stream.Recv()
		if err != nil {
			<-permits
			return endOfStream(ctx, err)
		}
		s.m.inflight.Inc()
		callID := in.GetCallId()
		done := func(ack *qimv1.SendAck, err error) {
			answers <- outcome(callID, ack, err)
			s.m.inflight.Dec()
			<-permits
		}
		if order == nil {
			s.send(ctx, in, done)
			continue
		}
		order.add(func() func() {
			cmd, err := parseSendOf(in, s.cfg.MaxBodyBytes, false)
			switch {
			case err != nil:
				return func() { s.refused("validate", err, done) }
			case cmd.amend != nil:
				return func() { s.submitAmend(ctx, in, cmd, done) }
			case !s.moderates(in):
				return func() { s.commit(ctx, cmd, cmd.identity(), done) }
			}
			return s.prepare(ctx, cmd, done)
		})
	}
}

// endOfStream treats the gateway closing its side, or the stream's context ending, as a normal
// end of the stream rather than an error of the writer.
func endOfStream(ctx context.Context, err error) error {
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil //nolint:nilerr // EOF or our own cancellation is the normal end of a stream
	}
	return err
}

// SendMessage is the unary form: one send, same pipeline.
func (g grpcServer) SendMessage(ctx context.Context, in *internalv1.AuthenticatedSend) (*internalv1.SendOutcome, error) {
	return g.s.sendAndWait(ctx, in, false)
}

// sendAndWait submits one send (a client's, or the admin API's SYSTEM message when system) and
// waits for its outcome.
func (s *Service) sendAndWait(ctx context.Context, in *internalv1.AuthenticatedSend, system bool) (*internalv1.SendOutcome, error) {
	res := make(chan *internalv1.SendOutcome, 1)
	s.submit(ctx, in, system, func(ack *qimv1.SendAck, err error) { res <- outcome(in.GetCallId(), ack, err) })
	select {
	case o := <-res:
		return o, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PullHistory serves one history page.
func (g grpcServer) PullHistory(ctx context.Context, in *internalv1.AuthenticatedPullHistory) (*internalv1.PullHistoryOutcome, error) {
	batch, err := g.s.pullHistory(ctx, in)
	if err != nil {
		var refusal *rpc.RequestError
		if !errors.As(err, &refusal) { // the client sees only a generic message: keep the cause here
			g.s.log.Warn("writer: history page failed", "code", rpc.CodeOf(err).String(), "err", err)
		}
		return &internalv1.PullHistoryOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}, nil
	}
	return &internalv1.PullHistoryOutcome{Batch: batch}, nil
}

func outcome(callID uint64, ack *qimv1.SendAck, err error) *internalv1.SendOutcome {
	if err != nil {
		return &internalv1.SendOutcome{CallId: callID, ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err),
			ErrorReason: rpc.ReasonOf(err)}
	}
	return &internalv1.SendOutcome{CallId: callID, Ack: ack}
}

// send validates and submits one client send; done is called exactly once.
func (s *Service) send(ctx context.Context, in *internalv1.AuthenticatedSend, done func(*qimv1.SendAck, error)) {
	s.submit(ctx, in, false, done)
}

// submit is send for a client (system false) or for a SYSTEM message (parseSendOf).
func (s *Service) submit(ctx context.Context, in *internalv1.AuthenticatedSend, system bool, done func(*qimv1.SendAck, error)) {
	cmd, err := parseSendOf(in, s.cfg.MaxBodyBytes, system)
	switch {
	case err != nil:
		s.refused("validate", err, done)
	case cmd.amend != nil:
		s.submitAmend(ctx, in, cmd, done)
	case !system && s.moderates(in):
		s.prepare(ctx, cmd, done)()
	default:
		s.commit(ctx, cmd, cmd.identity(), done)
	}
}

// refused answers a send refused before it reached the committer, counted by stage.
func (s *Service) refused(stage string, err error, done func(*qimv1.SendAck, error)) {
	s.m.failures.WithLabelValues(stage, rpc.CodeOf(err).String()).Inc()
	done(nil, err)
}

// commit hands a parsed send to the committer; ident is its idempotency identity.
func (s *Service) commit(ctx context.Context, cmd *sendCmd, ident [36]byte, done func(*qimv1.SendAck, error)) {
	if s.stopped() {
		done(nil, rpc.Refuse(contract.ErrCodeUnavailable, "writer is not committing (lease lost or shutting down)"))
		return
	}
	cl := &call{cmd: cmd, ident: ident, start: time.Now(), done: done}
	if err := s.committer.submit(ctx, cl); err != nil {
		done(nil, rpc.Refuse(contract.ErrCodeUnavailable, "send abandoned: %v", err))
	}
}

// drainPermits waits until every answered send released its permit (true) or the pipeline
// stopped answering (false; unanswered sends stay in the recovery index).
func drainPermits(permits chan struct{}, limit int, done <-chan struct{}) bool {
	for i := 0; i < limit; i++ {
		select {
		case permits <- struct{}{}:
		case <-done:
			return false
		}
	}
	return true
}
