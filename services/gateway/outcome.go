package gateway

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// openPipe returns the connection's live stream to writer instance i, opening one if there is
// none or the last one died. Only the read loop calls it. A connection holds at most one stream
// per writer instance, opened on its first SEND routed there.
//
// The stream's context is NOT the connection's: a SEND the gateway has read must reach its
// commit even when the client disconnects right after sending it (the "ACK lost" case the client
// later reconciles through its mailbox copy). So when the connection ends, teardown half-closes
// the stream and the writer finishes what it holds; only BackendTimeout later is the stream
// cancelled, which also frees a read loop stuck in Send on a writer that stopped reading.
func (c *conn) openPipe(i int) (*sendPipe, error) {
	if c.pipes == nil {
		c.pipes = make([]*sendPipe, len(c.s.writers.clients))
	}
	if p := c.pipes[i]; p != nil && !p.isDead() {
		return p, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	grace := c.s.cfg.BackendTimeout
	stop := context.AfterFunc(c.ctx, func() { time.AfterFunc(grace, cancel) })
	stream, err := c.s.writers.clients[i].SendStream(ctx)
	if err != nil {
		stop()
		cancel()
		c.s.writers.lost(i, err)
		return nil, err
	}
	p := &sendPipe{stream: stream, writer: i, cancel: func() { stop(); cancel() }, pending: make(map[uint64]pendingSend)}
	c.pipes[i] = p
	c.wg.Add(1)
	go c.receiveOutcomes(p)
	return p, nil
}

// receiveOutcomes turns the writer's SendOutcomes into SEND_ACK or ERROR frames until the
// stream ends.
func (c *conn) receiveOutcomes(p *sendPipe) {
	defer c.wg.Done()
	for {
		o, err := p.stream.Recv()
		if err != nil {
			if c.ctx.Err() == nil {
				c.s.writers.lost(p.writer, err) // the reader's EOF: route away before the next write fails
			}
			c.failPending(p, err)
			return
		}
		ps, ok := p.take(o.GetCallId())
		if !ok {
			c.s.m.orphanOutcomes.Inc()
			c.s.log.Error("gateway: writer answered an unknown call", "call_id", o.GetCallId())
			continue
		}
		if c.ctx.Err() != nil {
			c.settled() // the client is gone; the commit happened, the client reconciles later
			continue
		}
		if !c.deliverOutcome(ps, o) {
			c.interrupt() // the socket is dead; the read loop must stop too
		}
	}
}

// deliverOutcome writes the answer of one SEND. The SendAck travels exactly as the writer built
// it from the COMMITTED commit; the gateway only re-frames it.
func (c *conn) deliverOutcome(ps pendingSend, o *internalv1.SendOutcome) bool {
	defer c.settled()
	var ok bool
	code := contract.ErrorCode(o.GetErrorCode())
	switch {
	case code == contract.ErrCodeRejected:
		ok = c.sendRejected(ps.requestID, o.GetErrorMessage(), o.GetErrorReason())
	case code != contract.ErrCodeUnspecified:
		ok = c.sendError(ps.requestID, contract.OpSend, code, o.GetErrorMessage())
	case o.GetAck() == nil:
		ok = c.sendError(ps.requestID, contract.OpSend, contract.ErrCodeInternal, "writer answered neither an ack nor an error")
	default:
		payload, err := proto.Marshal(o.GetAck())
		if err != nil {
			ok = c.sendError(ps.requestID, contract.OpSend, contract.ErrCodeInternal, "gateway: encode SendAck")
			break
		}
		ok = c.send(contract.OpSendAck, ps.requestID, payload)
	}
	if ok {
		c.s.m.sendRoundTrip.Observe(time.Since(ps.start).Seconds())
	}
	return ok
}

// failPending answers every SEND still waiting on a stream that ended. The writer may or may not
// have committed them, so the answer is UNAVAILABLE (retryable with the same
// client_message_id), never a definite failure.
func (c *conn) failPending(p *sendPipe, cause error) {
	pend := p.kill()
	p.cancel()
	if c.ctx.Err() != nil {
		for range pend { // the connection is closing: nobody to tell
			c.settled()
		}
		return
	}
	if len(pend) > 0 {
		c.s.log.Warn("gateway: writer stream ended with sends in flight", "pending", len(pend), "err", cause)
	}
	alive := true
	for _, ps := range pend {
		if alive {
			alive = c.sendError(ps.requestID, contract.OpSend, contract.ErrCodeUnavailable,
				"writer stream lost; outcome unknown, retry with the same client_message_id")
		}
		c.settled()
	}
	if !alive {
		c.interrupt()
	}
}
