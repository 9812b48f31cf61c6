package writer

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// envelopeOf builds the Outbox value of a call's recorded commit. A direct send takes its
// participants from the request (no decode on the hot path); a group record's audience is frozen
// from the membership (audiences).
func (c *committer) envelopeOf(ctx context.Context, cl *call) ([]byte, error) {
	if cl.cmd.conversation.Kind() == contract.KindGroup {
		return c.aud.groupEnvelope(ctx, cl.commit.Record, cl.commit.ReservedAtMs)
	}
	return envelope(cl.commit.Record, cl.cmd.sender, cl.cmd.peer, cl.commit.ReservedAtMs)
}

// envelopeOfRecord is envelopeOf for the recovery loop, which has only the stored record.
func (c *committer) envelopeOfRecord(ctx context.Context, conv contract.ConversationID, record []byte, reservedAtMs int64) ([]byte, error) {
	if conv.Kind() == contract.KindGroup {
		return c.aud.groupEnvelope(ctx, record, reservedAtMs)
	}
	sender, peer, err := participants(record)
	if err != nil {
		return nil, err
	}
	return envelope(record, sender, peer, reservedAtMs)
}

// commitRecorded drives a commit the caller already RECORDED — a membership change, whose
// CONTROL message msgstore.ChangeMembership records together with the intervals — through the
// same Outbox produce and mark as a send, and waits for its ACK. It takes a pipeline slot like a
// send, so membership changes share the writer's back-pressure.
func (c *committer) commitRecorded(ctx context.Context, cmd *sendCmd, cm msgstore.Commit) (*qimv1.SendAck, error) {
	type result struct {
		ack *qimv1.SendAck
		err error
	}
	res := make(chan result, 1)
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("writer: membership commit: %w", ctx.Err())
	}
	cl := &call{cmd: cmd, ident: cm.Identity, commit: cm, start: time.Now(), done: func(ack *qimv1.SendAck, err error) {
		<-c.slots
		res <- result{ack, err}
	}}
	c.advance(ctx, cl)
	select {
	case r := <-res:
		return r.ack, r.err
	case <-ctx.Done():
		// The commit stays in the recovery index; the caller's retry or the recovery loop ends it.
		return nil, fmt.Errorf("writer: membership commit: %w", ctx.Err())
	}
}
