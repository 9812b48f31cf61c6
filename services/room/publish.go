package room

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// Outcomes of a publish (the outcome label of qim_room_publishes_total).
const (
	publishOK        = "ok"
	publishDuplicate = "duplicate"
	publishRefused   = "refused"
)

// roomKeyOf validates a tenant and a wire room id.
func roomKeyOf(tenantID, roomID []byte) (roomKey, error) {
	tenant, err := contract.U128FromBytes(tenantID)
	if err != nil {
		return roomKey{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	id, err := contract.U128FromBytes(roomID)
	if err != nil {
		return roomKey{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "room_id: %v", err)
	}
	conv, err := contract.RoomConversationID(id)
	if err != nil {
		return roomKey{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "room_id: %v", err)
	}
	return roomKey{tenant: tenant, conv: conv}, nil
}

// parsePublish validates a publish at the boundary, before any room is touched, so bad input
// never instantiates a room or consumes a room_seq.
func parsePublish(in *internalv1.RoomPublish, maxBody int) (*publishReq, error) {
	if in.GetSenderUserId() == 0 {
		return nil, rpc.Refuse(contract.ErrCodeUnauthorized, "no authenticated sender")
	}
	var req qimv1.SendRequest
	if err := proto.Unmarshal(in.GetSendRequest(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed SendRequest: %v", err)
	}
	target, ok := req.GetTarget().(*qimv1.SendRequest_RoomId)
	if !ok {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "SendRequest does not target a room_id")
	}
	key, err := roomKeyOf(in.GetTenantId(), target.RoomId)
	if err != nil {
		return nil, err
	}
	cmid, err := contract.ParseClientMessageID(req.GetClientMessageId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	if t := contract.MessageType(req.GetMessageType()); t.ServerOnly() {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "message_type %d (%s) is produced by the server only", uint32(t), t)
	}
	if req.GetAmend() != nil { // a room keeps no history to amend (ADR-0034); never publish it as a message
		return nil, rpc.Refuse(contract.ErrCodeUnimplemented, "room events cannot be recalled, edited or deleted")
	}
	if len(req.GetCustomType()) > contract.CustomTypeMaxBytes {
		return nil, rpc.Refuse(contract.ErrCodePayloadTooLarge, "custom_type is %d bytes, limit %d",
			len(req.GetCustomType()), contract.CustomTypeMaxBytes)
	}
	if len(req.GetBody()) > maxBody {
		return nil, rpc.Refuse(contract.ErrCodePayloadTooLarge, "body is %d bytes, limit %d", len(req.GetBody()), maxBody)
	}
	return &publishReq{key: key, sender: in.GetSenderUserId(), cmid: cmid, messageType: req.GetMessageType(),
		customType: req.GetCustomType(), body: req.GetBody()}, nil
}

// publish puts a client SEND into its room and queues it for every link with joined connections
// (or, for a retry still buffered, answers the first ack again). The ack's message_id is 16 zero
// bytes and conversation_seq the room_seq: a room event is identified by its room and room_seq.
func (s *Service) publish(ctx context.Context, in *internalv1.RoomPublish) (*qimv1.SendAck, time.Duration, error) {
	p, err := parsePublish(in, s.cfg.MaxBody)
	if err == nil && s.moderates(p.key.tenant) {
		err = s.premoderate(ctx, p)
	}
	if err != nil {
		s.m.publishes.WithLabelValues(publishRefused).Inc()
		return nil, 0, err
	}
	var (
		ev   *qimv1.RoomEvent
		dup  bool
		wait time.Duration
	)
	now := s.now()
	if lerr := s.withRoom(p.key, now, func(r *room) { ev, dup, wait, err = r.publish(p, now) }); lerr != nil {
		err = lerr
	}
	switch {
	case err != nil:
		s.m.publishes.WithLabelValues(publishRefused).Inc()
		return nil, wait, err
	case dup:
		s.m.publishes.WithLabelValues(publishDuplicate).Inc()
	default:
		s.m.publishes.WithLabelValues(publishOK).Inc()
		s.m.events.Inc()
	}
	cmid, conv := contract.U128(p.cmid).Bytes(), p.key.conv.Bytes()
	return &qimv1.SendAck{ClientMessageId: cmid[:], MessageId: make([]byte, 16), ConversationId: conv[:],
		ConversationSeq: ev.GetRoomSeq(), CommittedAtMs: ev.GetSentAtMs()}, 0, nil
}
