package gateway

// Typing indicators: ephemeral, never stored, best effort. TYPING names the peer of a direct
// conversation (or a group: grouptyping.go); the gateway turns it into a TYPING_EVENT for the peer and hands it to the peer's
// MailboxNode (PushSession), whose push path reaches every gateway the peer is on, as for a read
// sync (readsync.go). Nothing is written anywhere, and TYPING has no answer: a frame above the
// connection's rate (contract.TypingPerSecond, burst contract.TypingBurst) is dropped silently,
// counted, since a client that repeats TYPING cannot make use of an error.
//
// Rejected: answering TYPING (a round trip per keystroke burst for a hint that may be lost
// anyway).

import (
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/wire"
)

// onTyping forwards a typing indicator to the peer's devices. A malformed TYPING is answered
// INVALID_ARGUMENT, like any malformed request; a well-formed one never is.
func (c *conn) onTyping(m wire.Message) bool {
	var t qimv1.Typing
	if err := proto.Unmarshal(m.Payload, &t); err != nil || (t.GetPeerUserId() == 0) == (len(t.GetGroupId()) == 0) {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "Typing needs a peer_user_id or a group_id")
	}
	var group contract.ConversationID
	if len(t.GetGroupId()) != 0 {
		var err error
		if group, err = contract.ParseConversationID(t.GetGroupId()); err != nil || group.Kind() != contract.KindGroup {
			return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "Typing group_id is not a group conversation")
		}
	}
	if !c.typingLimit.Allow() {
		c.s.m.typing.WithLabelValues("dropped").Inc()
		return true
	}
	if len(t.GetGroupId()) != 0 {
		c.typeInGroup(group, t.GetTyping())
		return true
	}
	k := c.sess.key
	peer := contract.UserID(t.GetPeerUserId())
	conv := contract.DirectConversationID(k.tenant, k.user, peer).Bytes()
	ev := &qimv1.TypingEvent{ConversationId: conv[:], UserId: uint64(k.user), Typing: t.GetTyping(),
		ExpiresInMs: uint32(contract.TypingExpiry.Milliseconds())}
	c.s.m.typing.WithLabelValues("sent").Inc()
	c.pushSessionAsync(peer, &internalv1.PushTarget{TenantId: c.tenantBytes, UserId: uint64(peer), Typing: ev},
		c.s.m.typing.WithLabelValues("failed"))
	return true
}
