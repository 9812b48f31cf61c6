package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk"
)

// Amend sends an amendment (recall, edit, delete; ADR-0037) of the message at target in the
// direct conversation with peer, and waits for its SEND_ACK.
func (c *Client) Amend(ctx context.Context, peer contract.UserID, target uint64, act contract.AmendAction, body []byte) (*qimv1.SendAck, error) {
	return c.SendRequest(ctx, &qimv1.SendRequest{ClientMessageId: NewCmid(), Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(peer)},
		Body: body, Amend: &qimv1.Amend{TargetSeq: target, Action: uint32(act)}})
}

// rowOf is conv's row of c's session list (nil: not there yet).
func rowOf(ctx context.Context, c *Client, conv contract.ConversationID) (*qimv1.SessionEntry, error) {
	rows, err := c.SessionList(ctx, 100)
	if err != nil {
		return nil, err
	}
	cid := conv.Bytes()
	for _, r := range rows {
		if bytes.Equal(r.GetConversationId(), cid[:]) {
			return r, nil
		}
	}
	return nil, nil
}

// historyAt is the message at seq in c's history of conv (nil: none).
func historyAt(ctx context.Context, c *Client, conv contract.ConversationID, seq uint64) (*qimv1.HistoryMessage, error) {
	cid := conv.Bytes()
	msgs, err := c.History(ctx, cid[:])
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.GetConversationSeq() == seq {
			return m, nil
		}
	}
	return nil, nil
}

// amendmentEvent reports whether evs hold the amendment CONTROL message of target with act.
func amendmentEvent(target uint64, act contract.AmendAction) func([]*qimv1.MailboxEvent) bool {
	return func(evs []*qimv1.MailboxEvent) bool {
		for _, ev := range evs {
			var a qimv1.MessageAmendment
			if ev.GetMessageType() == uint32(contract.MessageControl) && ev.GetCustomType() == contract.AmendCustomType &&
				proto.Unmarshal(ev.GetBody(), &a) == nil && a.GetTargetSeq() == target && a.GetAction() == uint32(act) {
				return true
			}
		}
		return false
	}
}

// A message alice recalls disappears on every device of bob's — each of his two devices (on
// both gateways when there are two) receives the recall through its mailbox, history serves
// the message RECALLED without its body, his session row's head shows it recalled and its
// unread no longer counts it — while the message beside it stays whole. An edit is served with
// its new body; bob may neither recall nor edit alice's message.
func scenarioRecall(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	a, _, err := e.Login(ctx, alice, "phone", 0)
	if err != nil {
		return err
	}
	defer a.Close()
	var bobs []*Client
	for i, dev := range []string{"phone", "laptop"} {
		c, _, err := e.LoginAt(ctx, e.Gateways[i%len(e.Gateways)], bob, dev, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		bobs = append(bobs, c)
	}
	kept, err := a.Send(ctx, bob, NewCmid(), []byte("kept"))
	if err != nil {
		return err
	}
	gone, err := a.Send(ctx, bob, NewCmid(), []byte("regretted"))
	if err != nil {
		return err
	}
	conv := contract.DirectConversationID(e.Tenant, alice, bob)
	if err := waitFor(ctx, "bob's row with 2 unread", func() (bool, error) {
		r, err := rowOf(ctx, bobs[0], conv)
		return r != nil && r.GetUnreadCount() == 2, err
	}); err != nil {
		return err
	}
	if _, err := a.Amend(ctx, bob, gone.GetConversationSeq(), contract.AmendRecall, nil); err != nil {
		return fmt.Errorf("alice's recall: %w", err)
	}
	for i, c := range bobs {
		if _, _, err := PullUntil(ctx, c, 0, amendmentEvent(gone.GetConversationSeq(), contract.AmendRecall)); err != nil {
			return fmt.Errorf("bob's device %d: %w", i, err)
		}
		m, err := historyAt(ctx, c, conv, gone.GetConversationSeq())
		if err != nil {
			return err
		}
		if m == nil || m.GetFlags()&contract.FlagRecalled == 0 || m.Body != nil {
			return fmt.Errorf("bob's device %d: the recalled message in history: %v, want RECALLED without a body", i, m)
		}
		if k, err := historyAt(ctx, c, conv, kept.GetConversationSeq()); err != nil || k == nil || string(k.GetBody()) != "kept" || k.GetFlags() != 0 {
			return fmt.Errorf("bob's device %d: the message beside it: %v (%v), want it whole", i, k, err)
		}
	}
	if err := waitFor(ctx, "bob's row: 1 unread, the recalled head", func() (bool, error) {
		r, err := rowOf(ctx, bobs[1], conv)
		h := r.GetHead()
		return r != nil && r.GetUnreadCount() == 1 && h.GetConversationSeq() == gone.GetConversationSeq() &&
			h.GetFlags()&contract.FlagRecalled != 0 && h.Body == nil, err
	}); err != nil {
		return err
	}
	return amendEditAndRefusals(ctx, a, bobs[0], alice, bob, conv, kept.GetConversationSeq())
}

// amendEditAndRefusals is the rest of scenarioRecall: alice's edit is served with its new body,
// and bob may neither recall nor edit alice's message (FORBIDDEN, nothing committed).
func amendEditAndRefusals(ctx context.Context, a, b *Client, alice, bob contract.UserID, conv contract.ConversationID, seq uint64) error {
	if _, err := a.Amend(ctx, bob, seq, contract.AmendEdit, []byte("kept, edited")); err != nil {
		return fmt.Errorf("alice's edit: %w", err)
	}
	m, err := historyAt(ctx, b, conv, seq)
	if err != nil {
		return err
	}
	if m == nil || m.GetFlags() != contract.FlagEdited || string(m.GetBody()) != "kept, edited" {
		return fmt.Errorf("the edited message in bob's history: %v, want EDITED with the new body", m)
	}
	for _, act := range []contract.AmendAction{contract.AmendRecall, contract.AmendEdit} {
		body := []byte(nil)
		if act == contract.AmendEdit {
			body = []byte("bob's words")
		}
		if _, err := b.Amend(ctx, alice, seq, act, body); !isCode(err, contract.ErrCodeForbidden) {
			return fmt.Errorf("bob's %s of alice's message: %v, want FORBIDDEN", act, err)
		}
	}
	return nil
}

// In a group the owner deletes a member's message: every member's history serves it DELETED
// without its body and it leaves their unread; another member may not delete it.
func scenarioGroupDelete(ctx context.Context, e *Env) error {
	owner, member, other := e.User(), e.User(), e.User()
	o, _, err := e.Login(ctx, owner, "phone", 0)
	if err != nil {
		return err
	}
	defer o.Close()
	m, _, err := e.Login(ctx, member, "phone", 0)
	if err != nil {
		return err
	}
	defer m.Close()
	x, _, err := e.Login(ctx, other, "phone", 0)
	if err != nil {
		return err
	}
	defer x.Close()
	g, err := o.CreateGroup(ctx, NewCmid(), "amend", member, other)
	if err != nil {
		return err
	}
	sent, err := m.SendGroup(ctx, g.GetGroupId(), NewCmid(), []byte("off-topic"))
	if err != nil {
		return err
	}
	conv, _ := contract.ParseConversationID(sent.GetConversationId())
	del := &qimv1.SendRequest{ClientMessageId: NewCmid(), Target: &qimv1.SendRequest_GroupId{GroupId: g.GetGroupId()},
		Amend: &qimv1.Amend{TargetSeq: sent.GetConversationSeq(), Action: uint32(contract.AmendDelete)}}
	if _, err := x.SendRequest(ctx, del); !isCode(err, contract.ErrCodeForbidden) {
		return fmt.Errorf("a member's delete of another's message: %v, want FORBIDDEN", err)
	}
	del.ClientMessageId = NewCmid()
	if _, err := o.SendRequest(ctx, del); err != nil {
		return fmt.Errorf("the owner's delete: %w", err)
	}
	for _, c := range []*Client{o, m, x} {
		h, err := historyAt(ctx, c, conv, sent.GetConversationSeq())
		if err != nil {
			return err
		}
		if h == nil || h.GetFlags()&contract.FlagDeleted == 0 || h.Body != nil {
			return fmt.Errorf("the deleted message in a member's history: %v, want DELETED without a body", h)
		}
	}
	return waitFor(ctx, "the other member's row without unread", func() (bool, error) {
		r, err := rowOf(ctx, x, conv)
		if r != nil && r.GetUnreadCount() > 1 {
			return false, errors.New("more unread than messages")
		}
		return r != nil && r.GetUnreadCount() == 0 && r.GetHead().GetFlags()&contract.FlagDeleted != 0, err
	})
}

// Through the SDK: alice recalls one message and edits another from her local copies
// (Client.Recall, Client.Edit); bob's SDK store applies both — the recalled message without its
// body and out of his unread, the edited one with its new body — and so does alice's own.
func scenarioSDKAmend(ctx context.Context, e *Env) error {
	dirs, cleanup, err := sdkDirs(2)
	if err != nil {
		return err
	}
	defer cleanup()
	alice, bob := e.User(), e.User()
	a, err := openSDKPeer(e, alice, "phone", dirs[0])
	if err != nil {
		return err
	}
	defer a.close()
	b, err := openSDKPeerAt(e, e.Gateways[1%len(e.Gateways)], bob, "phone", dirs[1])
	if err != nil {
		return err
	}
	defer b.close()
	for _, body := range []string{"typo", "regret"} {
		if _, err := a.Send(ctx, bob, []byte(body), sdk.SendOptions{}); err != nil {
			return err
		}
	}
	conv := a.DirectConversation(bob)
	var last string
	if err := waitFor(ctx, "both messages committed and at bob, 2 unread", func() (bool, error) {
		c, err := b.conversation(ctx, conv)
		own, _, _ := a.LocalMessages(ctx, conv, 0, sdk.Newer, 10)
		last = fmt.Sprintf("bob's row %+v, alice's own %d", c, len(own))
		return c.Unread == 2 && len(own) == 2, err
	}); err != nil {
		return fmt.Errorf("%w (last: %s)", err, last)
	}
	mine, _, err := a.LocalMessages(ctx, conv, 0, sdk.Newer, 10)
	if err != nil || len(mine) != 2 {
		return fmt.Errorf("alice's local copies: %d (%v), want 2", len(mine), err)
	}
	if _, err := a.Edit(ctx, mine[0], []byte("fixed")); err != nil {
		return err
	}
	if _, err := a.Recall(ctx, mine[1]); err != nil {
		return err
	}
	for _, p := range []*sdkPeer{b, a} {
		if err := waitFor(ctx, "the edit and the recall applied locally", func() (bool, error) {
			msgs, _, err := p.LocalMessages(ctx, conv, 0, sdk.Newer, 10)
			var edited, recalled bool
			for _, m := range msgs {
				edited = edited || (m.Seq == mine[0].Seq && m.Flags == contract.FlagEdited && string(m.Body) == "fixed")
				recalled = recalled || (m.Seq == mine[1].Seq && m.Flags&contract.FlagRecalled != 0 && !m.HasBody)
			}
			return edited && recalled, err
		}); err != nil {
			msgs, _, _ := p.LocalMessages(context.Background(), conv, 0, sdk.Newer, 10)
			pend, _ := a.Pending(context.Background())
			return fmt.Errorf("user %d: %w (local %+v; alice's pending %+v)", p.user, err, msgs, pend)
		}
	}
	c, err := b.conversation(ctx, conv)
	if err != nil || c.Unread != 1 {
		return fmt.Errorf("bob's local unread %d (%v), want 1: the recalled message left it", c.Unread, err)
	}
	return nil
}
