package admin

// POST /v1/messages: a SYSTEM message (contract.MessageSystem, a type no client may send) from
// the product's system account to a user or a group, committed by the writers' AdminSend like a
// client's SEND: idempotent by client_message_id, counted as unread, in order with the rest of
// the conversation.

import (
	"context"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// MessageRequest is one system message.
type MessageRequest struct {
	Tenant          string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	Sender          uint64 `json:"sender" doc:"the product's system account (a user id); for a group, a current member"`
	ToUser          uint64 `json:"to_user,omitempty" doc:"recipient user (the 1:1 conversation with the sender); exactly one of to_user and group"`
	Group           string `json:"group,omitempty" doc:"recipient group, 32 hex digits"`
	Body            string `json:"body" doc:"the message body (UTF-8 text, at most the writer's body limit)"`
	CustomType      string `json:"custom_type,omitempty" doc:"the product's own sub-type, for rendering"`
	ClientMessageID string `json:"client_message_id,omitempty" doc:"idempotency key, 32 hex digits: a repeated call commits once (default: random)"`
}

// MessageResponse is the committed message.
type MessageResponse struct {
	ClientMessageID string `json:"client_message_id" doc:"the idempotency key used"`
	MessageID       string `json:"message_id" doc:"the message id, 32 hex digits"`
	ConversationID  string `json:"conversation_id" doc:"its conversation, 32 hex digits"`
	ConversationSeq uint64 `json:"conversation_seq" doc:"its position in the conversation"`
}

func message(ctx context.Context, a *api, in input) (int, any, []any, error) {
	var req MessageRequest
	if err := decode(in.body, &req); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"sender", req.Sender, "to_user", req.ToUser, "group", req.Group, "body_bytes", len(req.Body)}
	send, cmid, err := req.sendRequest()
	if err != nil {
		return 0, nil, audit, err
	}
	if a.groups == nil {
		return 0, nil, audit, fmt.Errorf("%w: messages are off (no QIM_WRITER_ADDRS)", errNotFound)
	}
	tenant, err := parseTenant(req.Tenant)
	if err != nil {
		return 0, nil, audit, err
	}
	raw, err := proto.Marshal(send)
	if err != nil {
		return 0, nil, audit, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	out, err := a.groups.AdminSend(ctx, &internalv1.AdminSendRequest{TenantId: tenant.AppendBytes(nil), SenderUserId: req.Sender, SendRequest: raw})
	if err != nil {
		return 0, nil, audit, fmt.Errorf("admin: AdminSend: %w", err)
	}
	if err := refusal(contract.ErrorCode(out.GetErrorCode()), out.GetErrorMessage()); err != nil {
		return 0, nil, audit, err
	}
	ack := out.GetAck()
	mid, _ := contract.U128FromBytes(ack.GetMessageId())
	cid, _ := contract.U128FromBytes(ack.GetConversationId())
	return http.StatusOK, MessageResponse{ClientMessageID: cmid.String(), MessageID: mid.String(), ConversationID: cid.String(),
		ConversationSeq: ack.GetConversationSeq()}, append(audit, "seq", ack.GetConversationSeq()), nil
}

// sendRequest checks the request and builds its SendRequest (SYSTEM) and idempotency key.
func (r MessageRequest) sendRequest() (*qimv1.SendRequest, contract.U128, error) {
	var cmid contract.U128
	switch {
	case r.Sender == 0:
		return nil, cmid, fmt.Errorf("%w: sender must be a user id", errBadRequest)
	case (r.ToUser == 0) == (r.Group == ""):
		return nil, cmid, fmt.Errorf("%w: give exactly one of to_user and group", errBadRequest)
	case r.Body == "":
		return nil, cmid, fmt.Errorf("%w: body must not be empty", errBadRequest)
	}
	var err error
	if cmid, err = idempotencyKey("client_message_id", r.ClientMessageID); err != nil {
		return nil, cmid, err
	}
	s := &qimv1.SendRequest{ClientMessageId: cmid.AppendBytes(nil), MessageType: uint32(contract.MessageSystem),
		CustomType: r.CustomType, Body: []byte(r.Body)}
	if r.ToUser != 0 {
		s.Target = &qimv1.SendRequest_PeerUserId{PeerUserId: r.ToUser}
		return s, cmid, nil
	}
	g, err := contract.ParseU128(r.Group)
	if err != nil || g.IsZero() {
		return nil, cmid, fmt.Errorf("%w: group: want 32 hex digits, not zero", errBadRequest)
	}
	s.Target = &qimv1.SendRequest_GroupId{GroupId: g.AppendBytes(nil)}
	return s, cmid, nil
}
