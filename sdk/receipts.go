package sdk

// Group read receipts (PULL_READ_RECEIPTS): who of a group read how far. The server answers from
// the members' read watermarks — "who read seq s" is {member | watermark >= s} — so nothing is
// kept per message, here or there, and the answer is always current. Pull only: call it when the
// user opens "read by", not per message received. A direct conversation needs no call: its
// Conversation carries the peer's watermark and ReadReceipt events move it.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// MemberRead is one member's read watermark in a group.
type MemberRead struct {
	User contract.UserID
	// Read: everything up to and including this seq is read; 0 nothing yet, or withheld.
	Read contract.ConversationSeq
	// Withheld: the member withholds its read receipts (it counts in neither ReadCount nor
	// Audience).
	Withheld bool
}

// GroupReceipts answers ReadReceipts.
type GroupReceipts struct {
	Group contract.ConversationID
	Seq   contract.ConversationSeq
	// Reads lists every current member but the user, ascending by user id.
	Reads []MemberRead
	// ReadCount of Audience have read Seq. Audience is the current members but the user who can
	// see Seq (a member added after it is not counted). Both 0 when Seq is 0.
	ReadCount, Audience int
}

// ReadReceipts asks who of a group has read how far and, for seq > 0, how many of the members
// who can see that message have read it. Errors: ErrOffline without a connection, ErrNotMember
// when the user is not a current member, ErrInvalid for a direct conversation, ErrForbidden while
// the user withholds its own receipts.
func (c *Client) ReadReceipts(ctx context.Context, group contract.ConversationID, seq contract.ConversationSeq) (GroupReceipts, error) {
	conv, err := groupConversation(group)
	if err != nil {
		return GroupReceipts{}, err
	}
	gid := conv.Bytes()
	payload, err := c.call(ctx, contract.OpPullReadReceipts, contract.OpReadReceiptsBatch,
		&qimv1.PullReadReceipts{ConversationId: gid[:], ConversationSeq: uint64(seq)})
	if err != nil {
		return GroupReceipts{}, err
	}
	var b qimv1.ReadReceiptsBatch
	if err := proto.Unmarshal(payload, &b); err != nil {
		return GroupReceipts{}, fmt.Errorf("%w: READ_RECEIPTS_BATCH: %v", ErrProtocol, err)
	}
	return receiptsOf(conv, seq, &b)
}

// SetReadReceipts withholds the user's read receipts (share false) or shares them again (the
// default). It is symmetric: while they are withheld, nobody sees this user's reads and this user
// sees nobody's (ReadReceipts answers ErrForbidden, peers' watermarks read 0, no ReadReceipt
// events). The user's own read state across its devices is unaffected. ErrOffline without a
// connection.
func (c *Client) SetReadReceipts(ctx context.Context, share bool) error {
	payload, err := c.call(ctx, contract.OpSetReadReceipts, contract.OpReadReceiptsSet, &qimv1.SetReadReceipts{Share: share})
	if err != nil {
		return err
	}
	var a qimv1.ReadReceiptsSet
	if err := proto.Unmarshal(payload, &a); err != nil || a.GetShare() != share {
		return fmt.Errorf("%w: READ_RECEIPTS_SET %v for share=%v (%v)", ErrProtocol, &a, share, err)
	}
	return nil
}

// receiptsOf checks that b answers the question asked and converts it.
func receiptsOf(conv contract.ConversationID, seq contract.ConversationSeq, b *qimv1.ReadReceiptsBatch) (GroupReceipts, error) {
	cid := conv.Bytes()
	if string(b.GetConversationId()) != string(cid[:]) || b.GetConversationSeq() != uint64(seq) ||
		b.GetReadCount() > b.GetAudienceCount() || int(b.GetAudienceCount()) > len(b.GetReads()) {
		return GroupReceipts{}, fmt.Errorf("%w: READ_RECEIPTS_BATCH for %x seq %d (read %d of %d, %d members) answers %x seq %d",
			ErrProtocol, b.GetConversationId(), b.GetConversationSeq(), b.GetReadCount(), b.GetAudienceCount(),
			len(b.GetReads()), cid, seq)
	}
	out := GroupReceipts{Group: conv, Seq: seq, ReadCount: int(b.GetReadCount()), Audience: int(b.GetAudienceCount()),
		Reads: make([]MemberRead, len(b.GetReads()))}
	for i, m := range b.GetReads() {
		r, err := contract.NewConversationSeq(m.GetReadConversationSeq())
		if err != nil || m.GetUserId() == 0 {
			return GroupReceipts{}, fmt.Errorf("%w: READ_RECEIPTS_BATCH member %d read %d", ErrProtocol, m.GetUserId(), m.GetReadConversationSeq())
		}
		out.Reads[i] = MemberRead{User: contract.UserID(m.GetUserId()), Read: r, Withheld: m.GetWithheld()}
	}
	return out, nil
}
