package sdk

// Room sends: SendRoom → SEND{room_id} → SEND_ACK{conversation_seq = room_seq}.
//
// A room send is not durable and is never recorded: the call waits while the connection
// goroutine sends it, and it exists only as long as the call. Each attempt reuses the call's
// client_message_id and content, so a retry after a lost connection or a retryable refusal gets
// the original ack back while the event is in the room's buffer instead of publishing it twice.
// Room sends go out as soon as the connection is authenticated (they do not wait for the mailbox
// reconciliation) and share Config.MaxInflightSends with pending sends: the gateway holds a send
// permit for each, and above its window it would stop reading the socket.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// roomSend is one SendRoom call waiting for its ack.
type roomSend struct {
	ctx     context.Context // the caller's: once it ends, the send is not attempted again
	key     contract.ConversationID
	room    contract.U128
	cmid    contract.ClientMessageID
	req     *qimv1.SendRequest // the same bytes every attempt
	reply   chan roomResult
	reqID   uint32 // SEND in flight on this connection; 0 when none
	retry   backoff
	retryAt time.Time
}

// sendSlots is how many more SENDs, pending or room, may be in flight.
func (e *engine) sendSlots() int {
	n := e.cfg.MaxInflightSends - len(e.inflight)
	for _, s := range e.rooms.sends {
		if s.reqID != 0 {
			n--
		}
	}
	return n
}

// flushRoomSends drops the sends whose caller gave up and sends the others that are due, oldest
// first, while slots are free.
func (e *engine) flushRoomSends(now time.Time) {
	e.rooms.sends = slices.DeleteFunc(e.rooms.sends, func(s *roomSend) bool { return s.reqID == 0 && s.ctx.Err() != nil })
	if !e.roomsUp() {
		return
	}
	for _, s := range e.rooms.sends {
		if s.reqID != 0 || now.Before(s.retryAt) {
			continue
		}
		if e.sendSlots() <= 0 {
			return
		}
		s.reqID = e.request(reqRoomSend, contract.OpSend, s.req, now, &request{rsend: s})
		if s.reqID == 0 {
			return
		}
		e.stats.sends.Add(1)
	}
}

// removeRoomSend takes an answered send out of the queue.
func (e *engine) removeRoomSend(s *roomSend) {
	e.rooms.sends = slices.DeleteFunc(e.rooms.sends, func(x *roomSend) bool { return x == s })
}

// onRoomAck answers SendRoom with the room_seq the event got.
func (e *engine) onRoomAck(m wire.Message, now time.Time) {
	r := e.take(m.RequestID, reqRoomSend)
	if r == nil {
		return
	}
	s := r.rsend
	e.removeRoomSend(s)
	ack, err := roomAckOf(m.Payload, s)
	s.reply <- roomResult{ack: ack, err: err}
	if err != nil {
		e.fail(err)
		return
	}
	e.flushPending(now) // a slot is free
}

func roomAckOf(payload []byte, s *roomSend) (RoomAck, error) {
	var ack qimv1.SendAck
	if err := proto.Unmarshal(payload, &ack); err != nil {
		return RoomAck{}, fmt.Errorf("%w: SEND_ACK: %v", ErrProtocol, err)
	}
	if cmid, err := contract.ParseClientMessageID(ack.GetClientMessageId()); err != nil || cmid != s.cmid {
		return RoomAck{}, fmt.Errorf("%w: SEND_ACK echoes another client_message_id", ErrProtocol)
	}
	if conv, err := contract.ParseConversationID(ack.GetConversationId()); err != nil || conv != s.key {
		return RoomAck{}, fmt.Errorf("%w: SEND_ACK of a room send names another conversation", ErrProtocol)
	}
	if ack.GetConversationSeq() == 0 {
		return RoomAck{}, fmt.Errorf("%w: SEND_ACK of a room send without a room_seq", ErrProtocol)
	}
	return RoomAck{Room: s.room, ClientMessageID: s.cmid, RoomSeq: ack.GetConversationSeq(),
		SentAtMs: ack.GetCommittedAtMs()}, nil
}

// onRoomSendError: an outcome the server could not decide (UNAVAILABLE, INTERNAL) sends the same
// request again after a pause, if the caller still waits; RATE_LIMITED (slow mode, the room's
// rate) and definite refusals answer the call — waiting out a slow mode is the user's decision,
// and RetryAfter says for how long.
func (e *engine) onRoomSendError(r *request, se *ServerError, now time.Time) {
	s := r.rsend
	s.reqID = 0
	switch {
	case se.Code == contract.ErrCodeUnauthorized:
		e.fail(se) // re-authenticate; sent again after the next AUTH_OK
	case se.Retryable() && se.Code != contract.ErrCodeRateLimited:
		d := s.retry.next()
		if se.RetryAfter > 0 {
			d = se.RetryAfter
		}
		s.retryAt = r.sentAt.Add(d) // between attempts, as holdSends does
		e.flushPending(now)
	default:
		e.removeRoomSend(s)
		s.reply <- roomResult{err: se}
		e.flushPending(now)
	}
}

// endRooms answers the room sends still waiting when the connection loop stops: nothing will
// send them, and the next loop must not send what its caller was told failed.
func (e *engine) endRooms() {
	for _, s := range e.rooms.sends {
		s.reply <- roomResult{err: ErrOffline}
	}
	e.rooms.sends = nil
}
