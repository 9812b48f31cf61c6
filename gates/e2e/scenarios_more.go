package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// scenarioOffsetZero sends to a user whose mailbox shard's dispatch partition is still empty, so
// the message becomes log offset 0 of that partition; a zero cursor must return it. (An exclusive
// lower bound of 0 once hid the first record of every partition from offline pulls.)
func scenarioOffsetZero(ctx context.Context, e *Env) error {
	empty, err := e.emptyPartitions(ctx)
	if err != nil {
		return err
	}
	shards, err := contract.NewShardCount(e.Shards)
	if err != nil {
		return err
	}
	sender := e.User()
	senderShard := shards.UserShard(e.Tenant, sender)
	var bob contract.UserID
	for i := 0; i < 100000 && bob == 0; i++ {
		u := e.User()
		if s := shards.UserShard(e.Tenant, u); empty[int32(s)] && s != senderShard {
			bob = u
		}
	}
	if bob == 0 {
		return errors.New("no empty dispatch partition left to test offset 0 (run on a fresh stack)")
	}
	ca, _, err := e.Login(ctx, sender, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	ack, err := ca.Send(ctx, bob, NewCmid(), []byte("first of its partition"))
	if err != nil {
		return err
	}
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	evs, _, err := PullUntil(ctx, cb, 0, HasMessage(ack.GetMessageId()))
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if string(ev.GetMessageId()) == string(ack.GetMessageId()) && contract.MailboxSeq(ev.GetMailboxSeq()).LogOffset() != 0 {
			return fmt.Errorf("message is at log offset %d, not 0: the scenario did not test offset 0",
				contract.MailboxSeq(ev.GetMailboxSeq()).LogOffset())
		}
	}
	return nil
}

func (e *Env) emptyPartitions(ctx context.Context) (map[int32]bool, error) {
	cl, err := e.kafka()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, contract.TopicDispatch)
	if err != nil {
		return nil, fmt.Errorf("e2e: list dispatch end offsets: %w", err)
	}
	out := map[int32]bool{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Err == nil && o.Offset == 0 })
	return out, nil
}

func scenarioIdempotent(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	cmid := NewCmid()
	first, err := ca.Send(ctx, bob, cmid, []byte("once"))
	if err != nil {
		return err
	}
	second, err := ca.Send(ctx, bob, cmid, []byte("once"))
	if err != nil {
		return err
	}
	if string(first.GetMessageId()) != string(second.GetMessageId()) || first.GetConversationSeq() != second.GetConversationSeq() {
		return fmt.Errorf("resend got a different ACK: %x/%d vs %x/%d", first.GetMessageId(), first.GetConversationSeq(),
			second.GetMessageId(), second.GetConversationSeq())
	}
	if _, err := ca.Send(ctx, bob, cmid, []byte("changed")); !isCode(err, contract.ErrCodeConflict) {
		return fmt.Errorf("same cmid with different content: %v, want CONFLICT", err)
	}
	return deliveredOnce(ctx, e, bob, first.GetMessageId())
}

// deliveredOnce logs the user in on a fresh device (zero cursor) and checks every message is in
// the mailbox exactly once, after a short settle so a late duplicate would be seen too.
func deliveredOnce(ctx context.Context, e *Env, user contract.UserID, mids ...[]byte) error {
	c, _, err := e.Login(ctx, user, fmt.Sprintf("check-%d", time.Now().UnixNano()), 0)
	if err != nil {
		return err
	}
	defer c.Close()
	evs, cursor, err := PullUntil(ctx, c, 0, func(evs []*qimv1.MailboxEvent) bool {
		for _, mid := range mids {
			if CountMessage(evs, mid) == 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	settle, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	more, _, _ := PullUntil(settle, c, cursor, func([]*qimv1.MailboxEvent) bool { return false })
	evs = append(evs, more...)
	for _, mid := range mids {
		if n := CountMessage(evs, mid); n != 1 {
			return fmt.Errorf("message %x delivered %d times to user %d, want 1", mid, n, user)
		}
	}
	return nil
}

// scenarioLostAck: the sender disconnects before its ACK arrives, reconnects, finds its own
// message in the mailbox by client_message_id and does not resend a duplicate; a resend anyway
// (as a client without the mailbox match would) converges to the same commit.
func scenarioLostAck(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	cmid := NewCmid()
	req := &qimv1.SendRequest{ClientMessageId: cmid, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(bob)},
		MessageType: 1, Body: []byte("ack lost")}
	if err := fireAndClose(ctx, ca, req); err != nil {
		return err
	}
	ca2, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca2.Close()
	evs, _, err := PullUntil(ctx, ca2, 0, func(evs []*qimv1.MailboxEvent) bool {
		for _, ev := range evs {
			if string(ev.GetClientMessageId()) == string(cmid) {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("sender's own copy with the cmid anchor never appeared: %w", err)
	}
	var mid []byte
	for _, ev := range evs {
		if string(ev.GetClientMessageId()) == string(cmid) {
			mid = ev.GetMessageId()
		}
	}
	ack, err := ca2.Send(ctx, bob, cmid, []byte("ack lost"))
	if err != nil {
		return err
	}
	if string(ack.GetMessageId()) != string(mid) {
		return errors.New("resend after reconnect created a second message")
	}
	return deliveredOnce(ctx, e, bob, mid)
}

// fireAndClose writes a SEND and closes the socket without waiting for the answer.
func fireAndClose(ctx context.Context, c *Client, req *qimv1.SendRequest) error {
	payload, err := marshal(req)
	if err != nil {
		return err
	}
	if err := c.w.Send(ctx, wire.Message{Opcode: contract.OpSend, RequestID: 999, Payload: payload}); err != nil {
		return err
	}
	return c.Close()
}

func scenarioKick(ctx context.Context, e *Env) error {
	u := e.User()
	_, err := duplicateLogin(ctx, e, u, e.GatewayOf(u), e.GatewayOf(u), 5*time.Second)
	return err
}

// duplicateLogin logs user's device in on oldGW, then again on newGW: the old session must get
// KICKED{REPLACED} within the bound and close, the new one must live. It returns how long the
// kick took from the start of the second login.
func duplicateLogin(ctx context.Context, e *Env, u contract.UserID, oldGW, newGW string, within time.Duration) (time.Duration, error) {
	old, _, err := e.LoginAt(ctx, oldGW, u, "same-device", 0)
	if err != nil {
		return 0, err
	}
	defer old.Close()
	start := time.Now()
	fresh, _, err := e.LoginAt(ctx, newGW, u, "same-device", 0)
	if err != nil {
		return 0, err
	}
	defer fresh.Close()
	select {
	case k := <-old.Kicked():
		if contract.KickReason(k.GetReason()) != contract.KickReplaced {
			return 0, fmt.Errorf("kick reason %d, want REPLACED", k.GetReason())
		}
	case <-time.After(within):
		return 0, fmt.Errorf("the old session (%s) was not sent KICKED within %v of the login on %s", oldGW, within, newGW)
	}
	took := time.Since(start)
	select {
	case <-old.Closed():
	case <-time.After(5 * time.Second):
		return took, errors.New("old connection was not closed after KICKED")
	}
	if _, err := fresh.Ping(ctx); err != nil {
		return took, fmt.Errorf("the new session (%s): %w", newGW, err)
	}
	return took, nil
}

func scenarioMalformed(ctx context.Context, e *Env) error {
	good, _, err := e.Login(ctx, e.User(), "g", 0)
	if err != nil {
		return err
	}
	defer good.Close()
	bad, _, err := e.Login(ctx, e.User(), "b", 0)
	if err != nil {
		return err
	}
	defer bad.Close()
	garbage := make([]byte, wire.HeaderSize)
	copy(garbage, "XX not a frame header")
	if err := bad.WriteRaw(garbage); err != nil {
		return err
	}
	select {
	case <-bad.Closed():
	case <-time.After(5 * time.Second):
		return errors.New("a malformed frame did not close the connection")
	}
	_, err = good.Ping(ctx)
	return err
}

// scenarioMailboxKill sends while the MailboxNode is SIGKILLed and restarted; every ACKed message
// is then pullable exactly once by its recipient.
func scenarioMailboxKill(ctx context.Context, e *Env) error {
	if e.Set == nil {
		return errors.New("needs a service set it may kill (run inside qim-gate)")
	}
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	var mids [][]byte
	for i := 0; i < 60; i++ {
		if i == 20 {
			if err := e.Set.Kill(svc.Mailbox); err != nil {
				return err
			}
		}
		if i == 40 {
			if err := e.Set.Start(ctx, svc.Mailbox); err != nil {
				return err
			}
		}
		ack, err := ca.Send(ctx, bob, NewCmid(), []byte{byte(i)})
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		mids = append(mids, ack.GetMessageId())
	}
	return deliveredOnce(ctx, e, bob, mids...)
}
