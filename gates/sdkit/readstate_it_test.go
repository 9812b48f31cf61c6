package sdkit

// Read state against the real deployment (gateway → session service): the session list merge
// after login, MARK_READ online and offline, and the unread definition on fresh devices.

import (
	"fmt"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
	"github.com/qim-dev/qim/sdk/store"
)

// conversationOf returns the local row of conv (zero ID when absent).
func conversationOf(t *testing.T, c *sdk.Client, conv contract.ConversationID) sdk.Conversation {
	t.Helper()
	convs, err := c.Conversations(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range convs {
		if cv.ID == conv {
			return cv
		}
	}
	return sdk.Conversation{}
}

// waitConversation waits until conv satisfies ok on c.
func waitConversation(t *testing.T, c *sdk.Client, r *recorder, conv contract.ConversationID, what string, ok func(sdk.Conversation) bool) sdk.Conversation {
	t.Helper()
	r.wait(t, 30*time.Second, what, func([]sdk.Event) bool { return ok(conversationOf(t, c, conv)) })
	return conversationOf(t, c, conv)
}

// relogin reconnects c until its login's session list shows conv satisfying ok. A list is built
// by the session projection from the dispatch log, so a conversation may reach it a moment after
// its messages reached the mailbox; every attempt is a full login, and the bound is tight.
func relogin(t *testing.T, c *sdk.Client, r *recorder, conv contract.ConversationID, what string, ok func(sdk.Conversation) bool) sdk.Conversation {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c.Disconnect()
		connectIT(t, c, r)
		cv := conversationOf(t, c, conv)
		if ok(cv) {
			if attempt > 1 {
				t.Logf("%s after %d logins (projection lag)", what, attempt)
			}
			return cv
		}
		if attempt == 10 {
			t.Fatalf("%s: not after %d logins; conversation %+v", what, attempt, cv)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func sendN(t *testing.T, from *sdk.Client, to contract.UserID, n int, prefix string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := from.Send(bg, to, []byte(fmt.Sprintf("%s%d", prefix, i)), sdk.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// (a) Unread 3 → 0 after MarkRead on one device; another device of the same user (its own
// device id and store), online meanwhile, is pushed the advanced watermark (SESSION_DELTA) and
// announces unread 0 without a login of its own; a later login keeps it.
func TestITMarkReadAcrossDevices(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)
	phone, pr := openIT(t, itConfig(t, set, alice, "phone", t.TempDir()))
	connectIT(t, phone, pr)
	laptop, lr := openIT(t, itConfig(t, set, alice, "laptop", t.TempDir()))
	connectIT(t, laptop, lr)
	conv := phone.DirectConversation(bob)
	sendN(t, bc, alice, 3, "m")
	three := func(c sdk.Conversation) bool { return c.Unread == 3 }
	cv := waitConversation(t, phone, pr, conv, "3 unread on the phone", three)
	waitConversation(t, laptop, lr, conv, "3 unread on the laptop", three)

	got, err := phone.MarkRead(bg, conv, cv.LatestSeq)
	if err != nil || got.Unread != 0 || got.ReadSeq != cv.LatestSeq {
		t.Fatalf("MarkRead: %+v %v, want read %d unread 0", got, err, cv.LatestSeq)
	}
	pr.wait(t, 10*time.Second, "MARK_READ_ACK", func([]sdk.Event) bool { return phone.Stats().MarkReadAcks >= 1 })
	readOnPhone := func(c sdk.Conversation) bool { return c.ReadSeq == cv.LatestSeq && c.Unread == 0 }
	waitConversation(t, laptop, lr, conv, "the phone's watermark pushed to the laptop", readOnPhone)
	announced := false
	for _, ev := range lr.snapshot() {
		if u, ok := ev.(sdk.ConversationsUpdated); ok {
			for _, x := range u.Conversations {
				announced = announced || (x.ID == conv && readOnPhone(x))
			}
		}
	}
	if !announced {
		t.Fatal("the pushed watermark was not announced with ConversationsUpdated")
	}
	relogin(t, laptop, lr, conv, "the phone's watermark on the laptop after a login", readOnPhone)
	if st := laptop.Stats(); st.MarkReads != 0 {
		t.Fatalf("the laptop sent %d MARK_READs for a watermark it only learnt", st.MarkReads)
	}
}

// (b) A user's own messages never count as unread, also on a fresh device with an empty store
// that learns them from its mailbox and the session list; a peer's reply does.
func TestITOwnMessagesNeverUnreadOnAFreshDevice(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	phone, pr := openIT(t, itConfig(t, set, alice, "phone", t.TempDir()))
	connectIT(t, phone, pr)
	sendN(t, phone, bob, 3, "own")
	pr.wait(t, 30*time.Second, "3 committed", func(evs []sdk.Event) bool { return countEvents[sdk.Committed](evs) == 3 })
	phone.Close()

	conv := phone.DirectConversation(bob)
	fresh, fr := openIT(t, itConfig(t, set, alice, "fresh-laptop", t.TempDir()))
	connectIT(t, fresh, fr)
	c := waitConversation(t, fresh, fr, conv, "3 own messages on the fresh device", func(c sdk.Conversation) bool {
		return len(bodiesFrom(t, fresh, conv, alice)) == 3
	})
	if c.Unread != 0 || c.ReadSeq != c.LatestSeq {
		t.Fatalf("fresh device: %+v, want unread 0 and read = latest", c)
	}
	for _, ev := range fr.snapshot() {
		if u, ok := ev.(sdk.ConversationsUpdated); ok {
			for _, x := range u.Conversations {
				if x.ID == conv && x.Unread != 0 {
					t.Fatalf("own messages were announced as unread: %+v", x)
				}
			}
		}
	}
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)
	sendN(t, bc, alice, 1, "reply")
	waitConversation(t, fresh, fr, conv, "the reply counted", func(c sdk.Conversation) bool { return c.Unread == 1 })
}

// (c) A MarkRead made offline survives a restart and reaches the server after the next login:
// another device of the user sees it.
func TestITOfflineMarkReadDeliveredAfterReconnect(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)
	phoneCfg := itConfig(t, set, alice, "phone", t.TempDir())
	phone, pr := openIT(t, phoneCfg)
	connectIT(t, phone, pr)
	conv := phone.DirectConversation(bob)
	sendN(t, bc, alice, 3, "m")
	cv := waitConversation(t, phone, pr, conv, "3 unread", func(c sdk.Conversation) bool { return c.Unread == 3 })
	phone.Disconnect()
	if got, err := phone.MarkRead(bg, conv, cv.LatestSeq); err != nil || got.Unread != 0 {
		t.Fatalf("offline MarkRead: %+v %v", got, err)
	}
	if n := phone.Stats().MarkReads; n != 0 {
		t.Fatalf("%d MARK_READs sent while offline", n)
	}
	phone.Close() // a restart: only the store remembers the watermark is owed

	phone2, pr2 := openIT(t, phoneCfg)
	connectIT(t, phone2, pr2)
	pr2.wait(t, 10*time.Second, "the owed MARK_READ acknowledged", func([]sdk.Event) bool { return phone2.Stats().MarkReadAcks >= 1 })
	if c := conversationOf(t, phone2, conv); c.ReadSeq != cv.LatestSeq || c.Unread != 0 {
		t.Fatalf("after reconnect: %+v, want read %d unread 0 (the login's merge must not lower it)", c, cv.LatestSeq)
	}
	laptop, lr := openIT(t, itConfig(t, set, alice, "laptop", t.TempDir()))
	connectIT(t, laptop, lr)
	if c := conversationOf(t, laptop, conv); c.ReadSeq != cv.LatestSeq || c.Unread != 0 {
		relogin(t, laptop, lr, conv, "the offline watermark on the laptop", func(c sdk.Conversation) bool {
			return c.ReadSeq == cv.LatestSeq && c.Unread == 0
		})
	}
}

// A fresh device whose mailbox no longer holds a conversation (trimmed by retention) finds it
// through the session list and backfills what lies after the read watermark, so its unread
// matches the server's.
func TestITFreshDeviceDiscoversTrimmedConversation(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)
	sendN(t, bc, alice, 3, "old")
	conv := bc.DirectConversation(alice)
	// A probe device proves the three are in alice's mailbox (and so past the projection's
	// dispatch offset too, give or take a moment) before the trim.
	probe, prr := openIT(t, itConfig(t, set, alice, "probe", t.TempDir()))
	connectIT(t, probe, prr)
	waitConversation(t, probe, prr, conv, "3 on the probe", func(c sdk.Conversation) bool { return c.Unread == 3 })
	probe.Close()
	trimMailbox(t, alice)

	fresh, fr := openIT(t, itConfig(t, set, alice, "fresh", t.TempDir()))
	connectIT(t, fresh, fr)
	c := conversationOf(t, fresh, conv)
	if c.ID != conv {
		c = relogin(t, fresh, fr, conv, "the trimmed conversation listed", func(c sdk.Conversation) bool { return c.ID == conv })
	}
	if got := bodiesFrom(t, fresh, conv, bob); fmt.Sprint(got) != "[old0 old1 old2]" || c.Unread != 3 || c.Incomplete {
		t.Fatalf("fresh device: %q, %+v; want the three backfilled, unread 3, complete", got, c)
	}
	if n := messagesAdded(fr.snapshot(), store.SourceHistory); n != 3 {
		t.Fatalf("%d messages backfilled from history, want 3", n)
	}
}
