package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// readSyncWithin is the acceptance bound of issue 40: a read on the phone clears the laptop's
// unread within a second.
const readSyncWithin = time.Second

// A MARK_READ on alice's phone reaches her laptop — an SDK client on the other gateway when there
// are two — as SESSION_DELTA: the laptop shows 0 unread within a second, without a session list
// of its own; the phone that marked is not sent one.
func scenarioReadSync(ctx context.Context, e *Env) error {
	dirs, cleanup, err := sdkDirs(1)
	if err != nil {
		return err
	}
	defer cleanup()
	alice, bob := e.User(), e.User()
	laptop, err := openSDKPeerAt(e, e.Gateways[1%len(e.Gateways)], alice, "laptop", dirs[0])
	if err != nil {
		return err
	}
	defer laptop.close()
	phone, _, err := e.LoginAt(ctx, e.Gateways[0], alice, "phone", 0)
	if err != nil {
		return err
	}
	defer phone.Close()
	b, _, err := e.Login(ctx, bob, "phone", 0)
	if err != nil {
		return err
	}
	defer b.Close()
	var latest uint64
	for i := range 3 {
		ack, err := b.Send(ctx, alice, NewCmid(), fmt.Appendf(nil, "unread %d", i))
		if err != nil {
			return err
		}
		latest = ack.GetConversationSeq()
	}
	conv := contract.DirectConversationID(e.Tenant, alice, bob)
	// A push to the laptop proves its MailboxNode's push path knows the laptop's gateway
	// (qim.presence is followed, so a login is reached a moment after AUTH_OK), which the
	// SESSION_DELTA travels too.
	if err := waitFor(ctx, "3 unread on the laptop, at least one pushed", func() (bool, error) {
		c, err := laptop.conversation(ctx, conv)
		return c.Unread == 3 && laptop.Stats().Pushes > 0, err
	}); err != nil {
		return err
	}
	cid := conv.Bytes()
	start := time.Now()
	if _, err := phone.MarkRead(ctx, cid[:], latest); err != nil {
		return fmt.Errorf("MARK_READ on the phone: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, readSyncWithin)
	defer cancel()
	if err := waitFor(wctx, "0 unread on the laptop", func() (bool, error) {
		c, err := laptop.conversation(ctx, conv)
		return c.Unread == 0 && c.ReadSeq == contract.ConversationSeq(latest), err
	}); err != nil {
		return fmt.Errorf("the laptop (gateway %d of %d) %v after the phone's MARK_READ: %w",
			2-len(e.Gateways)%2, len(e.Gateways), time.Since(start).Round(time.Millisecond), err)
	}
	select {
	case d := <-phone.SessionDeltas():
		return fmt.Errorf("the phone that marked was sent a SESSION_DELTA too: %v", d)
	case <-time.After(200 * time.Millisecond):
	}
	return nil
}

// Typing reaches the peer — on the other gateway when there are two — within a second, a flood of
// TYPING is cut to the connection's burst, and nothing of it is stored: the peer's mailbox holds
// the one message sent before, nothing else.
func scenarioTyping(ctx context.Context, e *Env) error {
	alice, bob, a, b, closeBoth, err := loginPair(ctx, e)
	if err != nil {
		return err
	}
	defer closeBoth()
	// A push to bob proves his MailboxNode's push path knows his gateway (qim.presence is
	// followed, so a login is pushed to a moment after AUTH_OK), which typing travels too.
	if _, err := a.Send(ctx, bob, NewCmid(), []byte("hello")); err != nil {
		return err
	}
	select {
	case <-b.Pushes():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no PUSH_EVENTS to bob within 10 s")
	}
	if err := a.Typing(ctx, bob, true); err != nil {
		return err
	}
	select {
	case ev := <-b.TypingEvents():
		if ev.GetUserId() != uint64(alice) || !ev.GetTyping() {
			return fmt.Errorf("TYPING_EVENT %v, want alice typing", ev)
		}
	case <-time.After(readSyncWithin):
		return fmt.Errorf("no TYPING_EVENT within %v", readSyncWithin)
	}
	for range 30 {
		if err := a.Typing(ctx, bob, true); err != nil {
			return err
		}
	}
	got := 0
	for quiet := time.After(time.Second); ; {
		select {
		case <-b.TypingEvents():
			got++
			continue
		case <-quiet:
		}
		break
	}
	if got == 0 || got > contract.TypingBurst+1 {
		return fmt.Errorf("%d TYPING_EVENTs from a flood of 30, want 1..%d (the burst, and one refill)", got, contract.TypingBurst+1)
	}
	batch, err := b.Pull(ctx, 0)
	if err != nil {
		return err
	}
	if n := len(batch.GetEntries()); n != 1 {
		return fmt.Errorf("the peer's mailbox holds %d events after one message and the typing, want the message only", n)
	}
	return nil
}

// A read in a direct conversation reaches the peer — on the other gateway when there are two —
// as READ_RECEIPT within a second, and the peer's session list carries it durably
// (peer_read_conversation_seq), so a device that missed the push still shows it.
func scenarioReadReceipt(ctx context.Context, e *Env) error {
	alice, bob, a, b, closeBoth, err := loginPair(ctx, e)
	if err != nil {
		return err
	}
	defer closeBoth()
	var seq uint64
	for i := range 2 {
		ack, err := b.Send(ctx, alice, NewCmid(), fmt.Appendf(nil, "read me %d", i))
		if err != nil {
			return err
		}
		seq = ack.GetConversationSeq()
	}
	// A push to bob proves his MailboxNode's push path knows his gateway, which receipts
	// travel too (a login is reached a moment after AUTH_OK).
	if _, err := a.Send(ctx, bob, NewCmid(), []byte("seen")); err != nil {
		return err
	}
	select {
	case <-b.Pushes():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no PUSH_EVENTS to bob within 10 s")
	}
	conv := contract.DirectConversationID(e.Tenant, alice, bob).Bytes()
	if _, err := a.MarkRead(ctx, conv[:], seq); err != nil {
		return err
	}
	select {
	case r := <-b.ReadReceipts():
		if r.GetReaderUserId() != uint64(alice) || r.GetReadConversationSeq() < seq {
			return fmt.Errorf("READ_RECEIPT %v, want alice at %d or later", r, seq)
		}
	case <-time.After(readSyncWithin):
		return fmt.Errorf("no READ_RECEIPT within %v of alice's MARK_READ", readSyncWithin)
	}
	// The SessionProjection lists bob's row a moment after his messages (it follows the dispatch
	// log); the watermark on it is read fresh.
	var got uint64
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = waitFor(wctx, "bob's row with alice's read watermark", func() (bool, error) {
		list, err := b.SessionList(ctx, 50)
		for _, s := range list {
			if string(s.GetConversationId()) == string(conv[:]) {
				got = s.GetPeerReadConversationSeq()
			}
		}
		return got >= seq, err
	})
	if err != nil {
		return fmt.Errorf("bob's row: peer_read_conversation_seq %d, want at least %d: %w", got, seq, err)
	}
	return nil
}

// loginPair logs two new users in with one phone each: alice at the first gateway, bob at the
// other when there are two, so what one does must cross gateways to reach the other. close ends
// both connections.
func loginPair(ctx context.Context, e *Env) (alice, bob contract.UserID, a, b *Client, closeBoth func(), err error) {
	alice, bob = e.User(), e.User()
	if a, _, err = e.LoginAt(ctx, e.Gateways[0], alice, "phone", 0); err != nil {
		return 0, 0, nil, nil, nil, err
	}
	if b, _, err = e.LoginAt(ctx, e.Gateways[1%len(e.Gateways)], bob, "phone", 0); err != nil {
		a.Close()
		return 0, 0, nil, nil, nil, err
	}
	return alice, bob, a, b, func() { a.Close(); b.Close() }, nil
}
