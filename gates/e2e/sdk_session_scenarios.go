package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// SDKSessionScenarios are the read-state scenarios driven through the SDK: the session list the
// client merges after every login, MarkRead, and the unread definition on a fresh device.
func SDKSessionScenarios() []Scenario {
	return []Scenario{
		{"sdk-read-state-across-devices", scenarioSDKReadAcrossDevices},
	}
}

// conversation returns p's local row of conv (zero ID when absent).
func (p *sdkPeer) conversation(ctx context.Context, conv contract.ConversationID) (sdk.Conversation, error) {
	convs, err := p.Conversations(ctx)
	for _, c := range convs {
		if c.ID == conv {
			return c, err
		}
	}
	return sdk.Conversation{}, err
}

// loginUntil waits for p's login to reconcile and, until conv satisfies ok, logs in again with
// the same store (at most ten logins). The session list is a projection of the dispatch log, so
// a conversation can reach it a moment after its messages reached the mailbox.
func loginUntil(ctx context.Context, p *sdkPeer, conv contract.ConversationID, what string, ok func(sdk.Conversation) bool) error {
	var last sdk.Conversation
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond)
			p.close()
			if err := p.open(); err != nil {
				return err
			}
		}
		err := waitFor(ctx, "a completed sync", func() (bool, error) { return p.Stats().Syncs > 0, nil })
		if err != nil {
			return err
		}
		if last, err = p.conversation(ctx, conv); err != nil || ok(last) {
			return err
		}
	}
	return fmt.Errorf("e2e: %s: not after 10 logins; user %d has %+v", what, p.user, last)
}

// scenarioSDKReadAcrossDevices: bob sends alice 3; alice's phone shows 3 unread and MarkRead
// takes it to 0 (MARK_READ acknowledged). A fresh laptop of alice (empty store, another device
// id) logs in: its mailbox brings the 3 as unread, its session list brings the phone's watermark,
// and it ends with 0 unread. The phone then writes 2 messages of its own, which never count on
// the laptop, and one reply from bob makes it exactly 1.
func scenarioSDKReadAcrossDevices(ctx context.Context, e *Env) error {
	dirs, cleanup, err := sdkDirs(3)
	if err != nil {
		return err
	}
	defer cleanup()
	bob, err := openSDKPeer(e, e.User(), "sdk-b", dirs[0])
	if err != nil {
		return err
	}
	defer bob.close()
	alice := e.User()
	phone, err := openSDKPeer(e, alice, "phone", dirs[1])
	if err != nil {
		return err
	}
	defer phone.close()
	conv := phone.DirectConversation(bob.user)
	if err := sendAll(ctx, bob, alice, bodies("b2a", 3)); err != nil {
		return err
	}
	var unread sdk.Conversation
	if err := waitFor(ctx, "3 unread on the phone", func() (bool, error) {
		unread, err = phone.conversation(ctx, conv)
		return unread.Unread == 3, err
	}); err != nil {
		return err
	}
	if c, err := phone.MarkRead(ctx, conv, unread.LatestSeq); err != nil || c.Unread != 0 {
		return fmt.Errorf("e2e: MarkRead on the phone: %+v, %v", c, err)
	}
	if err := waitFor(ctx, "MARK_READ_ACK on the phone", func() (bool, error) { return phone.Stats().MarkReadAcks > 0, nil }); err != nil {
		return err
	}
	laptop, err := openSDKPeer(e, alice, "laptop", dirs[2])
	if err != nil {
		return err
	}
	defer laptop.close()
	err = loginUntil(ctx, laptop, conv, "the phone's watermark on a fresh laptop", func(c sdk.Conversation) bool {
		return c.ReadSeq == unread.LatestSeq && c.Unread == 0
	})
	if err != nil {
		return err
	}
	if err := errors.Join(sendAll(ctx, phone, bob.user, bodies("a2b", 2)), waitCommitted(ctx, phone, 2)); err != nil {
		return err
	}
	if err := waitFor(ctx, "the phone's 2 messages on the laptop", func() (bool, error) {
		msgs, _, err := laptop.LocalMessages(ctx, conv, 0, sdk.Newer, 100)
		c, cerr := laptop.conversation(ctx, conv)
		if c.Unread != 0 {
			return false, fmt.Errorf("e2e: the laptop counts own messages as unread: %+v", c)
		}
		return len(msgs) == 5, errors.Join(err, cerr)
	}); err != nil {
		return err
	}
	if err := sendAll(ctx, bob, alice, []string{"reply"}); err != nil {
		return err
	}
	return waitFor(ctx, "exactly 1 unread on the laptop after a reply", func() (bool, error) {
		c, err := laptop.conversation(ctx, conv)
		if c.Unread > 1 {
			return false, fmt.Errorf("e2e: the laptop counts %d unread after one reply", c.Unread)
		}
		return c.Unread == 1, err
	})
}
