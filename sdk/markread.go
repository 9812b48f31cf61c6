package sdk

// Sending the read watermark: MARK_READ for every conversation whose local watermark the server
// has not taken into account (store.UnsentReads), once the connection is reconciled.
//
// The store, not this goroutine, remembers what is owed: MarkRead raises read_seq durably, and a
// conversation stays owed until a MARK_READ_ACK (or a session list reporting at least as much)
// covers it. So a MarkRead made offline, or whose MARK_READ was lost with a connection, goes out
// after the next login — also after a restart — with no queue of its own. Flushes happen when
// the connection becomes ready, when MarkRead wakes the loop, and after each ACK; at most
// maxReadsInflight MARK_READs are in flight, one per conversation, so a device owing thousands
// (a long offline session) cannot flood the gateway, and a second MarkRead on a conversation
// whose MARK_READ is in flight waits for the ACK and is then sent with the newer value.

import (
	"bytes"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// maxReadsInflight bounds the MARK_READs awaiting their ACK on one connection.
const maxReadsInflight = 32

type readState struct {
	inflight map[contract.ConversationID]uint32 // MARK_READ request id per conversation
	retryAt  time.Time                          // after a retryable refusal; zero when none
	failures int
}

// flushReads sends MARK_READ for owed watermarks, most recently active conversations first.
func (e *engine) flushReads(now time.Time) {
	if e.phase != phaseReady || e.end != nil || e.sink == nil {
		return
	}
	if !e.reads.retryAt.IsZero() {
		if now.Before(e.reads.retryAt) {
			return
		}
		e.reads.retryAt = time.Time{}
	}
	room := maxReadsInflight - len(e.reads.inflight)
	if room <= 0 {
		return
	}
	// Twice the cap: at most maxReadsInflight of the rows are in flight, so the page holds
	// `room` sendable rows whenever that many exist.
	marks, err := e.st.UnsentReads(storeCtx, 2*maxReadsInflight)
	if err != nil {
		e.fail(fmt.Errorf("sdk: list unsent read watermarks: %w", err))
		return
	}
	for _, mk := range marks {
		if room == 0 {
			return
		}
		if _, busy := e.reads.inflight[mk.Conversation]; busy {
			continue
		}
		conv := mk.Conversation.Bytes()
		id := e.request(reqMarkRead, contract.OpMarkRead, &qimv1.MarkRead{ConversationId: conv[:],
			ReadConversationSeq: uint64(mk.Seq)}, now, &request{mark: mk})
		if id == 0 {
			return
		}
		e.reads.inflight[mk.Conversation] = id
		e.stats.markReads.Add(1)
		room--
	}
}

// onMarkReadAck stores the server's absolute watermark (forward only) and sends what is still
// owed.
func (e *engine) onMarkReadAck(m wire.Message, now time.Time) {
	r := e.take(m.RequestID, reqMarkRead)
	if r == nil {
		e.log.Debug("sdk: MARK_READ_ACK for no request")
		return
	}
	delete(e.reads.inflight, r.mark.Conversation)
	var ack qimv1.MarkReadAck
	if err := proto.Unmarshal(m.Payload, &ack); err != nil {
		e.fail(fmt.Errorf("%w: MARK_READ_ACK: %v", ErrProtocol, err))
		return
	}
	conv := r.mark.Conversation.Bytes()
	stored, err := contract.NewConversationSeq(ack.GetReadConversationSeq())
	if err == nil && len(ack.GetConversationId()) > 0 && !bytes.Equal(ack.GetConversationId(), conv[:]) {
		err = fmt.Errorf("answers another conversation")
	}
	if err != nil {
		e.fail(fmt.Errorf("%w: MARK_READ_ACK: %v", ErrProtocol, err))
		return
	}
	c, changed, err := e.st.AckRead(storeCtx, r.mark.Conversation, r.mark.Seq, stored)
	if err != nil {
		e.fail(fmt.Errorf("sdk: store MARK_READ_ACK: %w", err))
		return
	}
	e.reads.failures = 0
	e.stats.markReadAcks.Add(1)
	if changed {
		e.emit(ConversationsUpdated{Conversations: []Conversation{c}})
	}
	e.flushReads(now)
}

// onMarkReadError retries a retryable refusal after a delay (the watermark stays owed in the
// store meanwhile). A definite refusal (NOT_MEMBER, INVALID_ARGUMENT) is recorded as taken into
// account, so the watermark stays local instead of being sent again at every login.
func (e *engine) onMarkReadError(r *request, se *ServerError, now time.Time) {
	delete(e.reads.inflight, r.mark.Conversation)
	if se.Retryable() {
		e.reads.failures++
		delay := se.RetryAfter
		if delay <= 0 {
			delay = min(e.cfg.ReconnectMin<<min(e.reads.failures, 10), e.cfg.ReconnectMax)
		}
		e.reads.retryAt = now.Add(delay)
		return
	}
	e.stats.markReadRefused.Add(1)
	e.log.Warn("sdk: MARK_READ refused; the read watermark stays local", "code", se.Code.String())
	if _, _, err := e.st.AckRead(storeCtx, r.mark.Conversation, r.mark.Seq, 0); err != nil {
		e.fail(fmt.Errorf("sdk: record refused MARK_READ: %w", err))
		return
	}
	e.flushReads(now)
}
