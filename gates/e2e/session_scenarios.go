package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// SessionScenarios are the session-list scenarios (docs/architecture.md, invariant 10): unread from
// the server's definition, MARK_READ, and the user-level read watermark seen by every device.
func SessionScenarios() []Scenario {
	return []Scenario{
		{"session-unread-3-to-0-after-mark-read", scenarioUnreadMarkRead},
		{"session-own-messages-never-unread", scenarioOwnNotUnread},
		{"session-new-conversation-appears-for-peer", scenarioNewConversation},
		{"session-read-state-shared-across-devices", scenarioReadAcrossDevices},
	}
}

// projectionWait bounds how long a scenario waits for the session projection, which consumes
// the dispatch log on its own and may trail the SEND_ACK by a moment.
const projectionWait = 15 * time.Second

// PullSessionList performs one PULL_SESSION_LIST.
func (c *Client) PullSessionList(ctx context.Context, token []byte, limit uint32) (*qimv1.SessionListBatch, error) {
	var b qimv1.SessionListBatch
	req := &qimv1.PullSessionList{PageToken: token, Limit: limit}
	if err := c.Call(ctx, contract.OpPullSessionList, req, contract.OpSessionListBatch, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// MarkRead performs one MARK_READ.
func (c *Client) MarkRead(ctx context.Context, conv []byte, seq uint64) (*qimv1.MarkReadAck, error) {
	var a qimv1.MarkReadAck
	req := &qimv1.MarkRead{ConversationId: conv, ReadConversationSeq: seq}
	if err := c.Call(ctx, contract.OpMarkRead, req, contract.OpMarkReadAck, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// SessionList pages through the whole session list (pages of limit rows).
func (c *Client) SessionList(ctx context.Context, limit uint32) ([]*qimv1.SessionEntry, error) {
	var all []*qimv1.SessionEntry
	var token []byte
	for {
		b, err := c.PullSessionList(ctx, token, limit)
		if err != nil {
			return nil, err
		}
		all = append(all, b.GetSessions()...)
		if !b.GetHasMore() {
			return all, nil
		}
		if len(b.GetNextPageToken()) == 0 {
			return nil, errors.New("e2e: has_more without a next_page_token")
		}
		token = b.GetNextPageToken()
	}
}

// WaitSessionRow pulls the list until conv's row satisfies ok (a nil ok: until it exists).
func WaitSessionRow(ctx context.Context, c *Client, conv []byte, within time.Duration, ok func(*qimv1.SessionEntry) bool) (*qimv1.SessionEntry, error) {
	deadline := time.Now().Add(within)
	var last *qimv1.SessionEntry
	for {
		list, err := c.SessionList(ctx, 100)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if bytes.Equal(s.GetConversationId(), conv) {
				last = s
			}
		}
		if last != nil && (ok == nil || ok(last)) {
			return last, nil
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("e2e: session row not as expected within %s (last seen: %v)", within, last)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sendN sends n text messages from c to peer and returns the last ACK.
func sendN(ctx context.Context, c *Client, peer contract.UserID, n int) (*qimv1.SendAck, error) {
	var ack *qimv1.SendAck
	var err error
	for i := 0; i < n; i++ {
		if ack, err = c.Send(ctx, peer, NewCmid(), fmt.Appendf(nil, "message %d", i)); err != nil {
			return nil, err
		}
	}
	return ack, nil
}

func scenarioUnreadMarkRead(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	last, err := sendN(ctx, cb, alice, 3)
	if err != nil {
		return err
	}
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	conv, seq := last.GetConversationId(), last.GetConversationSeq()
	row, err := WaitSessionRow(ctx, ca, conv, projectionWait, func(s *qimv1.SessionEntry) bool {
		return s.GetLatestConversationSeq() == seq
	})
	if err != nil {
		return err
	}
	if row.GetUnreadCount() != 3 || !row.GetUnreadExact() || row.GetPeerUserId() != uint64(bob) {
		return fmt.Errorf("before MARK_READ: unread %d exact %v peer %d, want 3 exact from %d", row.GetUnreadCount(),
			row.GetUnreadExact(), row.GetPeerUserId(), bob)
	}
	ack, err := ca.MarkRead(ctx, conv, seq)
	if err != nil {
		return err
	}
	if ack.GetReadConversationSeq() != seq || ack.GetUnreadCount() != 0 || !ack.GetUnreadExact() {
		return fmt.Errorf("MARK_READ_ACK = %v, want read %d unread 0", ack, seq)
	}
	row, err = WaitSessionRow(ctx, ca, conv, 0, nil)
	if err != nil {
		return err
	}
	if row.GetUnreadCount() != 0 || row.GetReadConversationSeq() != seq {
		return fmt.Errorf("after MARK_READ the list shows unread %d read %d", row.GetUnreadCount(), row.GetReadConversationSeq())
	}
	return nil
}

// scenarioOwnNotUnread: a user's own messages never count, also on a device that has never been
// used (its local store is empty: only the server's watermark and definition can answer).
func scenarioOwnNotUnread(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "phone", 0)
	if err != nil {
		return err
	}
	last, err := sendN(ctx, ca, bob, 3)
	ca.Close()
	if err != nil {
		return err
	}
	conv, seq := last.GetConversationId(), last.GetConversationSeq()
	fresh, _, err := e.Login(ctx, alice, "fresh-laptop", 0)
	if err != nil {
		return err
	}
	defer fresh.Close()
	// Every observation must show 0 unread (the definition excludes own messages whatever the
	// watermark); the watermark itself reaches the last sent seq once the projection applied it.
	var ownCounted *qimv1.SessionEntry
	row, err := WaitSessionRow(ctx, fresh, conv, projectionWait, func(s *qimv1.SessionEntry) bool {
		if s.GetUnreadCount() != 0 {
			ownCounted = s
		}
		return s.GetLatestConversationSeq() == seq && s.GetReadConversationSeq() == seq
	})
	if ownCounted != nil {
		return fmt.Errorf("own messages counted as unread on a fresh device: %v", ownCounted)
	}
	if err != nil {
		return err
	}
	if row.GetUnreadCount() != 0 || len(row.GetHead().GetClientMessageId()) != 16 {
		return fmt.Errorf("own messages on a fresh device: unread %d read %d head anchor %x, want 0, %d and the anchor",
			row.GetUnreadCount(), row.GetReadConversationSeq(), row.GetHead().GetClientMessageId(), seq)
	}
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	reply, err := cb.Send(ctx, alice, NewCmid(), []byte("reply"))
	if err != nil {
		return err
	}
	row, err = WaitSessionRow(ctx, fresh, conv, projectionWait, func(s *qimv1.SessionEntry) bool {
		return s.GetLatestConversationSeq() == reply.GetConversationSeq()
	})
	if err != nil {
		return err
	}
	if row.GetUnreadCount() != 1 {
		return fmt.Errorf("after one reply alice sees unread %d, want 1 (her own 3 never count)", row.GetUnreadCount())
	}
	return nil
}

func scenarioNewConversation(ctx context.Context, e *Env) error {
	alice, carol := e.User(), e.User()
	cc, _, err := e.Login(ctx, carol, "c1", 0)
	if err != nil {
		return err
	}
	defer cc.Close()
	before, err := cc.SessionList(ctx, 100)
	if err != nil {
		return err
	}
	if len(before) != 0 {
		return fmt.Errorf("a brand-new user has %d conversations", len(before))
	}
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	ack, err := ca.Send(ctx, carol, NewCmid(), []byte("hello carol"))
	if err != nil {
		return err
	}
	row, err := WaitSessionRow(ctx, cc, ack.GetConversationId(), projectionWait, nil)
	if err != nil {
		return fmt.Errorf("the new conversation never appeared in the peer's list: %w", err)
	}
	h := row.GetHead()
	if row.GetPeerUserId() != uint64(alice) || row.GetUnreadCount() != 1 || !bytes.Equal(h.GetMessageId(), ack.GetMessageId()) ||
		string(h.GetBody()) != "hello carol" || len(h.GetClientMessageId()) != 0 {
		return fmt.Errorf("new conversation row = %v", row)
	}
	return nil
}

// scenarioReadAcrossDevices: the read watermark is per user; two different devices of one user
// are online together (only a second login of the same device kicks), and a MARK_READ on one is
// what the other reads.
func scenarioReadAcrossDevices(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	phone, _, err := e.Login(ctx, alice, "phone", 0)
	if err != nil {
		return err
	}
	defer phone.Close()
	laptop, _, err := e.Login(ctx, alice, "laptop", 0)
	if err != nil {
		return err
	}
	defer laptop.Close()
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	last, err := sendN(ctx, cb, alice, 2)
	if err != nil {
		return err
	}
	conv, seq := last.GetConversationId(), last.GetConversationSeq()
	for _, c := range []*Client{phone, laptop} {
		if _, err := WaitSessionRow(ctx, c, conv, projectionWait, func(s *qimv1.SessionEntry) bool {
			return s.GetLatestConversationSeq() == seq && s.GetUnreadCount() == 2
		}); err != nil {
			return err
		}
	}
	if _, err := phone.MarkRead(ctx, conv, seq); err != nil {
		return err
	}
	row, err := WaitSessionRow(ctx, laptop, conv, 0, nil)
	if err != nil {
		return err
	}
	if row.GetReadConversationSeq() != seq || row.GetUnreadCount() != 0 {
		return fmt.Errorf("the laptop sees read %d unread %d after the phone read up to %d", row.GetReadConversationSeq(),
			row.GetUnreadCount(), seq)
	}
	select {
	case k := <-phone.Kicked():
		return fmt.Errorf("the phone was kicked by the laptop's login (%v): different devices must coexist", k)
	case k := <-laptop.Kicked():
		return fmt.Errorf("the laptop was kicked (%v)", k)
	default:
	}
	return nil
}
