package e2e

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Group requests of the frame-level client. Each returns the decoded answer or, for an ERROR,
// a *ServerError, exactly as Call does.

// CreateGroup performs CREATE_GROUP with request id crid.
func (c *Client) CreateGroup(ctx context.Context, crid []byte, name string, members ...contract.UserID) (*qimv1.GroupCreated, error) {
	var out qimv1.GroupCreated
	req := &qimv1.CreateGroup{ClientRequestId: crid, Name: name, MemberUserIds: userIDs(members)}
	if err := c.Call(ctx, contract.OpCreateGroup, req, contract.OpGroupCreated, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SendGroup sends one text message to a group and waits for its SEND_ACK.
func (c *Client) SendGroup(ctx context.Context, group, cmid, body []byte) (*qimv1.SendAck, error) {
	return c.SendRequest(ctx, &qimv1.SendRequest{ClientMessageId: cmid, Target: &qimv1.SendRequest_GroupId{GroupId: group},
		MessageType: uint32(contract.MessageText), Body: body})
}

// SendRequest sends an arbitrary SEND (any target, any message type) and waits for its answer.
func (c *Client) SendRequest(ctx context.Context, req *qimv1.SendRequest) (*qimv1.SendAck, error) {
	var ack qimv1.SendAck
	if err := c.Call(ctx, contract.OpSend, req, contract.OpSendAck, &ack); err != nil {
		return nil, err
	}
	return &ack, nil
}

// PullMembers performs one PULL_MEMBERS.
func (c *Client) PullMembers(ctx context.Context, group, token []byte, limit uint32) (*qimv1.MembersBatch, error) {
	var out qimv1.MembersBatch
	req := &qimv1.PullMembers{GroupId: group, PageToken: token, Limit: limit}
	if err := c.Call(ctx, contract.OpPullMembers, req, contract.OpMembersBatch, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Members pages through a group's current members; every page must report the same
// membership_version (the scenarios do not change the group while listing).
func (c *Client) Members(ctx context.Context, group []byte) ([]*qimv1.Member, uint64, error) {
	var all []*qimv1.Member
	var token []byte
	var version uint64
	for page := 0; ; page++ {
		b, err := c.PullMembers(ctx, group, token, 0)
		if err != nil {
			return nil, 0, err
		}
		if page > 0 && b.GetMembershipVersion() != version {
			return nil, 0, fmt.Errorf("e2e: membership_version moved from %d to %d while listing", version, b.GetMembershipVersion())
		}
		version = b.GetMembershipVersion()
		all = append(all, b.GetMembers()...)
		if !b.GetHasMore() {
			return all, version, nil
		}
		if len(b.GetNextPageToken()) == 0 || page > 10000 {
			return nil, 0, errors.New("e2e: MEMBERS_BATCH has_more without a usable next_page_token")
		}
		token = b.GetNextPageToken()
	}
}

// LeaveGroup performs LEAVE_GROUP.
func (c *Client) LeaveGroup(ctx context.Context, group []byte) (*qimv1.LeaveGroupAck, error) {
	var out qimv1.LeaveGroupAck
	if err := c.Call(ctx, contract.OpLeaveGroup, &qimv1.LeaveGroup{GroupId: group}, contract.OpLeaveGroupAck, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PullHistory performs one PULL_HISTORY.
func (c *Client) PullHistory(ctx context.Context, conv []byte, anchor uint64, dir historyDirection, limit uint32) (*qimv1.HistoryBatch, error) {
	var out qimv1.HistoryBatch
	req := &qimv1.PullHistory{ConversationId: conv, AnchorSeq: anchor, Direction: uint32(dir), Limit: limit}
	if err := c.Call(ctx, contract.OpPullHistory, req, contract.OpHistoryBatch, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// historyDirection is PullHistory.direction (raw uint32 on the wire).
type historyDirection uint32

const (
	historyOlder historyDirection = 1
	historyNewer historyDirection = 2
)

func (d historyDirection) String() string {
	switch d {
	case historyOlder:
		return "OLDER"
	case historyNewer:
		return "NEWER"
	}
	return fmt.Sprintf("direction %d", uint32(d))
}

// History reads the whole visible history of conv, NEWER from seq 0 in pages of 3.
func (c *Client) History(ctx context.Context, conv []byte) ([]*qimv1.HistoryMessage, error) {
	return c.HistoryPaged(ctx, conv, historyNewer, 3)
}

// HistoryPaged reads the whole visible history of conv in one direction (NEWER from seq 0,
// OLDER from the newest) in pages of limit, so paging itself is exercised, across the gaps
// between a member's intervals too. It checks every page stays beyond its anchor and the anchor
// always moves, and returns the records ascending.
func (c *Client) HistoryPaged(ctx context.Context, conv []byte, dir historyDirection, limit uint32) ([]*qimv1.HistoryMessage, error) {
	var all []*qimv1.HistoryMessage
	var anchor uint64
	for page := 0; page < 1000; page++ {
		b, err := c.PullHistory(ctx, conv, anchor, dir, limit)
		if err != nil {
			return nil, err
		}
		rs := b.GetRecords()
		for i, r := range rs {
			seq := r.GetConversationSeq()
			beyond := seq > anchor
			if dir == historyOlder {
				beyond = anchor == 0 || seq < anchor
			}
			if !beyond || (i > 0 && seq <= rs[i-1].GetConversationSeq()) || !bytes.Equal(r.GetConversationId(), conv) {
				return nil, fmt.Errorf("e2e: history (direction %d, anchor %d) returned seq %d of %x at position %d", dir, anchor, seq,
					r.GetConversationId(), i)
			}
		}
		if len(rs) > 0 && dir == historyNewer {
			all, anchor = append(all, rs...), rs[len(rs)-1].GetConversationSeq()
		} else if len(rs) > 0 {
			all, anchor = append(slices.Clone(rs), all...), rs[0].GetConversationSeq()
		}
		if !b.GetHasMore() {
			return all, nil
		}
		// A page that skipped records between two of the reader's intervals names where to go on.
		next := b.GetNextAnchorSeq()
		switch {
		case next != 0 && dir == historyNewer && next > anchor, next != 0 && dir == historyOlder && next < anchor:
			anchor = next
		case len(rs) == 0:
			return nil, fmt.Errorf("e2e: history page after %d has more but neither records nor a next anchor", anchor)
		}
	}
	return nil, errors.New("e2e: history paging did not end")
}

// AdminGroup calls the writer's GroupAdmin.AdminGroup (there is no client opcode for an admin
// ADD or REMOVE). A non-zero error_code comes back as *ServerError, like a client ERROR.
func (e *Env) AdminGroup(ctx context.Context, req *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	addr := e.WriterAddr()
	if addr == "" {
		return nil, errors.New("e2e: admin group operations need the writer's address (run inside qim-gate)")
	}
	creds, err := e.Set.AdminDialOption()
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	cc, err := grpc.NewClient(addr, creds)
	if err != nil {
		return nil, fmt.Errorf("e2e: dial writer %s: %w", addr, err)
	}
	defer cc.Close()
	if len(req.GetTenantId()) == 0 {
		req.TenantId = e.Tenant.AppendBytes(nil)
	}
	out, err := internalv1.NewGroupAdminClient(cc).AdminGroup(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("e2e: AdminGroup op %d: %w", req.GetOp(), err)
	}
	if out.GetErrorCode() != 0 {
		return out, &ServerError{Code: contract.ErrorCode(out.GetErrorCode()), Msg: out.GetErrorMessage()}
	}
	return out, nil
}

// AdminChange adds (op ADD) or removes (op REMOVE) users of a group as an administrator.
func (e *Env) AdminChange(ctx context.Context, op contract.AdminGroupOp, group []byte, users ...contract.UserID) (*internalv1.AdminGroupOutcome, error) {
	return e.AdminGroup(ctx, &internalv1.AdminGroupRequest{Op: uint32(op), GroupId: group, UserIds: userIDs(users)})
}

// carried is what mailbox events and history records have in common.
type carried interface {
	GetMessageId() []byte
	GetConversationId() []byte
	GetConversationSeq() uint64
	GetMessageType() uint32
	GetCustomType() string
	GetBody() []byte
	GetSenderUserId() uint64
}

// membershipOf decodes a membership CONTROL message; nil, nil for any other message.
func membershipOf(m carried) (*qimv1.MembershipChange, error) {
	if contract.MessageType(m.GetMessageType()) != contract.MessageControl {
		return nil, nil
	}
	if m.GetCustomType() != contract.MembershipCustomType {
		return nil, fmt.Errorf("e2e: CONTROL message at seq %d has custom_type %q", m.GetConversationSeq(), m.GetCustomType())
	}
	var ch qimv1.MembershipChange
	if err := proto.Unmarshal(m.GetBody(), &ch); err != nil {
		return nil, fmt.Errorf("e2e: CONTROL body at seq %d: %w", m.GetConversationSeq(), err)
	}
	return &ch, nil
}

// inConversation keeps the messages of conv, sorted by conversation_seq.
func inConversation[T carried](xs []T, conv []byte) []carried {
	var out []carried
	for _, x := range xs {
		if bytes.Equal(x.GetConversationId(), conv) {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b carried) int { return cmp.Compare(a.GetConversationSeq(), b.GetConversationSeq()) })
	return out
}

// NewRequestID returns a random, non-zero 16-byte client_request_id.
func NewRequestID() []byte { return NewCmid() }

// groupIDOf is the group id CREATE_GROUP must answer for (creator, crid).
func groupIDOf(e *Env, creator contract.UserID, crid []byte) ([]byte, error) {
	u, err := contract.U128FromBytes(crid)
	if err != nil {
		return nil, err
	}
	b := contract.DeriveGroupID(e.Tenant, creator, u).Bytes()
	return b[:], nil
}

func userIDs(us []contract.UserID) []uint64 {
	out := make([]uint64, len(us))
	for i, u := range us {
		out[i] = uint64(u)
	}
	return out
}

// PullReadReceipts performs one PULL_READ_RECEIPTS: the other current members' watermarks in conv
// and, for seq > 0, how many of the message's audience read it.
func (c *Client) PullReadReceipts(ctx context.Context, conv []byte, seq uint64) (*qimv1.ReadReceiptsBatch, error) {
	var out qimv1.ReadReceiptsBatch
	req := &qimv1.PullReadReceipts{ConversationId: conv, ConversationSeq: seq}
	if err := c.Call(ctx, contract.OpPullReadReceipts, req, contract.OpReadReceiptsBatch, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetReadReceipts performs one SET_READ_RECEIPTS.
func (c *Client) SetReadReceipts(ctx context.Context, share bool) (*qimv1.ReadReceiptsSet, error) {
	var out qimv1.ReadReceiptsSet
	if err := c.Call(ctx, contract.OpSetReadReceipts, &qimv1.SetReadReceipts{Share: share}, contract.OpReadReceiptsSet, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
