package writer

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/qim-dev/qim/services/internal/rpc"

	"google.golang.org/protobuf/proto"
	"lukechampine.com/blake3"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// sendCmd is a validated, canonical send. Everything the commit needs is derived here, before the
// store is touched, so bad input never consumes a sequence.
type sendCmd struct {
	tenant       contract.TenantID
	sender       contract.UserID
	device       string
	cmid         contract.ClientMessageID
	peer         contract.UserID
	conversation contract.ConversationID
	messageType  uint32
	customType   string
	body         []byte
	mentions     []uint64
	// amend is set on an amendment (amend.go): the CONTROL message that records it is built
	// from the target once the target is read, and the commit merges it into the index.
	amend *amendReq
	// retention is the record's retention class (an amendment takes its target's, so it lives
	// exactly as long).
	retention contract.RetentionClass
}

// parseSendOf validates a forwarded SendRequest at the boundary: a client's (system false: every
// server-only type is refused) or the admin API's system message (system true: SYSTEM is the
// only type accepted).
func parseSendOf(in *internalv1.AuthenticatedSend, maxBody int, system bool) (*sendCmd, error) {
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	if in.GetSenderUserId() == 0 {
		return nil, rpc.Refuse(contract.ErrCodeUnauthorized, "no authenticated sender")
	}
	var req qimv1.SendRequest
	if err := proto.Unmarshal(in.GetSendRequest(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed SendRequest: %v", err)
	}
	cmid, err := contract.ParseClientMessageID(req.GetClientMessageId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	switch t := contract.MessageType(req.GetMessageType()); {
	case system && t != contract.MessageSystem:
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "message_type %d (%s): the admin API sends SYSTEM only", uint32(t), t)
	case !system && t.ServerOnly():
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "message_type %d (%s) is produced by the server only", uint32(t), t)
	}
	if len(req.GetCustomType()) > contract.CustomTypeMaxBytes {
		return nil, rpc.Refuse(contract.ErrCodePayloadTooLarge, "custom_type is %d bytes, limit %d",
			len(req.GetCustomType()), contract.CustomTypeMaxBytes)
	}
	if len(req.GetBody()) > maxBody {
		return nil, rpc.Refuse(contract.ErrCodePayloadTooLarge, "body is %d bytes, limit %d", len(req.GetBody()), maxBody)
	}
	c := &sendCmd{
		tenant: tenant, sender: contract.UserID(in.GetSenderUserId()), device: in.GetSenderDeviceId(),
		cmid: cmid, messageType: req.GetMessageType(), customType: req.GetCustomType(), body: req.GetBody(),
		mentions: canonicalMentions(req.GetMentions()),
	}
	switch t := req.GetTarget().(type) {
	case *qimv1.SendRequest_PeerUserId:
		if t.PeerUserId == 0 {
			return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "peer_user_id is zero")
		}
		c.peer = contract.UserID(t.PeerUserId)
		c.conversation = contract.DirectConversationID(tenant, c.sender, c.peer)
	case *qimv1.SendRequest_GroupId:
		gid, err := contract.U128FromBytes(t.GroupId)
		if err != nil {
			return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "group_id: %v", err)
		}
		if c.conversation, err = contract.GroupConversationID(gid); err != nil {
			return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
		}
	default:
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "SendRequest has no target")
	}
	if req.GetAmend() != nil {
		if system {
			return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "the admin API does not amend messages")
		}
		return c, parseAmend(c, &req)
	}
	return c, nil
}

// canonicalMentions sorts and de-duplicates so the identity digest does not depend on order.
func canonicalMentions(m []uint64) []uint64 {
	if len(m) == 0 {
		return nil
	}
	out := slices.Clone(m)
	slices.Sort(out)
	return slices.Compact(out)
}

// identity is the 36-byte idempotency identity of a send: blake3 over the canonical request
// (everything that defines the message, the body included) followed by the body length. It is
// compared instead of storing the body twice; a retry that changes any of these is a different
// message under a reused client_message_id and is rejected with CONFLICT.
func (c *sendCmd) identity() [36]byte {
	h := blake3.New(32, nil)
	var buf [64]byte
	b := append(buf[:0], contract.DomainSendIdentity...)
	b = c.tenant.AppendBytes(b)
	b = binary.BigEndian.AppendUint64(b, uint64(c.sender))
	_, _ = h.Write(b)
	writeLenPrefixed(h, []byte(c.device))
	cid := c.conversation.Bytes()
	b = append(buf[:0], cid[:]...)
	b = binary.BigEndian.AppendUint32(b, c.messageType)
	_, _ = h.Write(b)
	writeLenPrefixed(h, []byte(c.customType))
	b = binary.BigEndian.AppendUint32(buf[:0], uint32(len(c.mentions)))
	for _, m := range c.mentions {
		b = binary.BigEndian.AppendUint64(b, m)
	}
	_, _ = h.Write(b)
	writeLenPrefixed(h, c.body)
	var id [36]byte
	h.Sum(id[:0])
	binary.BigEndian.PutUint32(id[32:], uint32(len(c.body)))
	return id
}

func writeLenPrefixed(h *blake3.Hasher, p []byte) {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(p)))
	_, _ = h.Write(l[:])
	_, _ = h.Write(p)
}

// record builds the canonical MessageRecord for a fresh intent, without conversation_seq (the
// store's script appends it after allocating the sequence). The trace id is the message id: the
// ConversationWriter is the trace origin, and the message id is unique, time-ordered and free.
func (c *sendCmd) record(mid contract.MessageID) ([]byte, error) {
	midb := mid.Bytes()
	cmid := contract.U128(c.cmid).Bytes()
	tenant := c.tenant.Bytes()
	cid := c.conversation.Bytes()
	rec := &internalv1.MessageRecord{
		TenantId: tenant[:], ConversationId: cid[:], ConversationKind: uint32(c.conversation.Kind()),
		MessageId: midb[:], SenderUserId: uint64(c.sender), SenderDeviceId: c.device, ClientMessageId: cmid[:],
		MessageType: c.messageType, CustomType: c.customType, Body: c.body, Mentions: c.mentions,
		CreatedAtMs: int64(mid.TimeMs()), TraceId: midb[:], DirectPeerUserId: uint64(c.peer),
		RetentionClass: uint32(c.retention),
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("writer: encode record: %w", err)
	}
	return b, nil
}
