package gateway

// Read-state sync: a MARK_READ on one device reaches the user's other online devices as
// SESSION_DELTA, the conversation's complete session entry with absolute values. The gateway that
// served the MARK_READ hands the entry to the MailboxNode owning the user's shard (PushSession),
// whose push path knows every gateway the user is on (qim.presence) and calls their Push service
// like for a mailbox push; each gateway writes the frame to the user's connections except the
// device that marked. Like a push, it is best effort and never moves a cursor or a watermark: the
// watermark is already stored, and a device that misses the delta sees it in its next session
// list.
//
// Rejected: having the gateway follow all of qim.presence to call the other gateways itself
// (every gateway would hold the whole directory for a frame per MARK_READ), and pushing from the
// SessionProjection (it knows no gateway and would need the directory too).

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// shareRead hands the entry a MARK_READ produced to the user's MailboxNode, off the connection's
// pull worker: the client has its MARK_READ_ACK already, and a slow node must not delay its next
// pull. A failure is counted, never retried.
func (c *conn) shareRead(entry *qimv1.SessionEntry) {
	k := c.sess.key
	c.s.m.readSyncs.WithLabelValues("sent").Inc()
	c.pushSessionAsync(k.user, &internalv1.PushTarget{TenantId: c.tenantBytes, UserId: uint64(k.user),
		SessionDelta: &qimv1.SessionDelta{Sessions: []*qimv1.SessionEntry{entry}}, ExceptDevice: c.sess.device},
		c.s.m.readSyncs.WithLabelValues("failed"))
}

// pushSessionAsync hands t to the MailboxNode owning user's shard, off the calling goroutine (a
// connection's read loop or pull worker: a slow node must not hold the client's frames). Best
// effort: a failure is counted on failed, never retried.
func (c *conn) pushSessionAsync(user contract.UserID, t *internalv1.PushTarget, failed prometheus.Counter) {
	node := c.s.mailboxFor(c.sess.key.tenant, user)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.BackendTimeout)
		defer cancel()
		if _, err := node.client.PushSession(ctx, t); err != nil {
			failed.Inc()
		}
	}()
}

// pushControl queues one frame (SESSION_DELTA, TYPING_EVENT) to conns but the one of the device
// except names. A full control queue drops the frame (counted): unlike an answer, it may be lost.
func (s *Service) pushControl(conns []*conn, except string, op contract.Opcode, msg proto.Message, delivered prometheus.Counter) string {
	payload, err := proto.Marshal(msg)
	if err != nil {
		return "invalid"
	}
	queued := false
	for _, c := range conns {
		if c.sess == nil || (except != "" && c.sess.device == except) {
			continue
		}
		select {
		case c.ctrlQ <- outFrame{op: op, payload: payload}:
			queued = true
			delivered.Inc()
		default:
			s.m.pushDropped.Inc()
		}
	}
	if !queued {
		return "offline"
	}
	return "queued"
}

// shareReceipt tells the peer of a direct conversation that the user read up to the entry's
// watermark (READ_RECEIPT), through the peer's MailboxNode like a typing event. Best effort: the
// peer's next session list carries the watermark anyway (peer_read_conversation_seq).
func (c *conn) shareReceipt(entry *qimv1.SessionEntry) {
	peer := contract.UserID(entry.GetPeerUserId())
	if peer == 0 || peer == c.sess.key.user {
		return
	}
	r := &qimv1.ReadReceipt{ConversationId: entry.GetConversationId(), ReaderUserId: uint64(c.sess.key.user),
		ReadConversationSeq: entry.GetReadConversationSeq()}
	c.s.m.receipts.WithLabelValues("sent").Inc()
	c.pushSessionAsync(peer, &internalv1.PushTarget{TenantId: c.tenantBytes, UserId: uint64(peer), Receipt: r},
		c.s.m.receipts.WithLabelValues("failed"))
}
