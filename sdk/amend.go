package sdk

// Recall, edit and delete (ADR-0037). An amendment is a send like any other: recorded as a
// pending row (its body the encoded qim.v1.MessageAmendment, type CONTROL, so it survives a
// restart and is retried under its client_message_id), sent as a SEND with SendRequest.amend,
// resolved by its SEND_ACK or its own mailbox copy. The store applies it to the local copy of
// the target when it commits (store/amend.go), and MessagesAmended reports the changed message.

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
)

// Recall takes back one of the user's own messages for everyone, within the server's recall
// window (2 minutes by default). Like Send it returns at once; Committed or Failed (FORBIDDEN
// once the window passed: a *ServerError) reports the outcome.
func (c *Client) Recall(ctx context.Context, m Message) (contract.ClientMessageID, error) {
	return c.amend(ctx, m, contract.AmendRecall, nil)
}

// Edit replaces the body of one of the user's own messages for everyone.
func (c *Client) Edit(ctx context.Context, m Message, body []byte) (contract.ClientMessageID, error) {
	return c.amend(ctx, m, contract.AmendEdit, body)
}

// Delete removes a message for everyone: the user's own, or any message of a group the user
// owns.
func (c *Client) Delete(ctx context.Context, m Message) (contract.ClientMessageID, error) {
	return c.amend(ctx, m, contract.AmendDelete, nil)
}

func (c *Client) amend(ctx context.Context, m Message, act contract.AmendAction, body []byte) (contract.ClientMessageID, error) {
	if c.isClosed() {
		return contract.ClientMessageID{}, ErrClosed
	}
	switch {
	case m.Seq == 0 || m.ID.IsZero():
		return contract.ClientMessageID{}, fmt.Errorf("%w: amend a committed message (seq and id set)", ErrInvalid)
	case m.Type == contract.MessageControl:
		return contract.ClientMessageID{}, fmt.Errorf("%w: a CONTROL message cannot be amended", ErrInvalid)
	case len(body) > contract.MaxFramePayload-1024:
		return contract.ClientMessageID{}, fmt.Errorf("%w: body of %d bytes does not fit one frame", ErrInvalid, len(body))
	}
	np, err := c.amendTarget(ctx, m)
	if err != nil {
		return contract.ClientMessageID{}, err
	}
	a := &qimv1.MessageAmendment{TargetSeq: uint64(m.Seq), Action: uint32(act), ActorUserId: uint64(c.cfg.User)}
	mid := contract.U128(m.ID).Bytes()
	a.TargetMessageId = mid[:]
	if act == contract.AmendEdit {
		a.Body = append([]byte{}, body...)
	}
	enc, err := proto.Marshal(a)
	if err != nil {
		return contract.ClientMessageID{}, fmt.Errorf("sdk: encode amendment: %w", err)
	}
	np.Type, np.CustomType, np.Body, np.NowMs = contract.MessageControl, contract.AmendCustomType, enc, time.Now().UnixMilli()
	p, err := c.st.AddPending(ctx, np)
	if err != nil {
		return contract.ClientMessageID{}, fmt.Errorf("sdk: record amendment: %w", err)
	}
	c.wakeSender()
	return p.ClientMessageID, nil
}

// amendTarget is the pending send's target: the group, or the direct conversation's peer.
func (c *Client) amendTarget(ctx context.Context, m Message) (store.NewPending, error) {
	switch m.Conversation.Kind() {
	case contract.KindGroup:
		return store.NewPending{Group: m.Conversation}, nil
	case contract.KindDirect:
	default:
		return store.NewPending{}, fmt.Errorf("%w: only direct and group messages can be amended", ErrInvalid)
	}
	if m.Sender != c.cfg.User {
		return store.NewPending{Peer: m.Sender}, nil
	}
	peer, err := c.st.PeerOf(ctx, m.Conversation)
	if err != nil {
		return store.NewPending{}, err
	}
	if peer == 0 {
		return store.NewPending{}, fmt.Errorf("%w: conversation %s is not in the local session list", ErrInvalid, m.Conversation)
	}
	return store.NewPending{Peer: peer}, nil
}

// amendRequest turns req into the SEND of the amendment p holds (a pending row of type CONTROL
// with the amendment's custom type); nil for any other pending send.
func amendRequest(req *qimv1.SendRequest, p store.Pending) (*store.Amend, error) {
	if p.Type != contract.MessageControl || p.CustomType != contract.AmendCustomType {
		return nil, nil
	}
	var a qimv1.MessageAmendment
	if err := proto.Unmarshal(p.Body, &a); err != nil {
		return nil, fmt.Errorf("sdk: pending amendment of ordinal %d does not decode: %w", p.Ordinal, err)
	}
	act := contract.AmendAction(a.GetAction())
	req.MessageType, req.CustomType, req.Body, req.Mentions = 0, "", a.GetBody(), nil
	req.Amend = &qimv1.Amend{TargetSeq: a.GetTargetSeq(), Action: uint32(act)}
	return &store.Amend{Target: contract.ConversationSeq(a.GetTargetSeq()), Flags: act.Flag(), Body: a.GetBody()}, nil
}
