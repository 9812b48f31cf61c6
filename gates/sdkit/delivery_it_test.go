package sdkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/sdk"
	"github.com/qim-dev/qim/sdk/store"
)

var bg = context.Background()

// Offline sends are pending at once and delivered exactly once after (re)connecting: first for a
// client that was never connected, then for one whose gateway died under it.
func TestITOfflineSendDeliveredExactlyOnce(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	ac, ar := openIT(t, itConfig(t, set, alice, "a1", t.TempDir()))
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)

	cmid, err := ac.Send(bg, bob, []byte("sent before connecting"), sdk.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := ac.Pending(bg); len(p) != 1 || p[0].ClientMessageID != cmid {
		t.Fatalf("not pending immediately: %+v", p)
	}
	connectIT(t, ac, ar)
	ar.wait(t, 20*time.Second, "Committed", func(evs []sdk.Event) bool { return countEvents[sdk.Committed](evs) == 1 })
	conv := ac.DirectConversation(bob)
	br.wait(t, 20*time.Second, "bob's copy", func([]sdk.Event) bool { return len(bodiesFrom(t, bc, conv, alice)) == 1 })

	// The gateway dies: alice learns within the contract's 7 s, keeps sending offline.
	if err := set.Kill(svc.Gateway); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	ar.wait(t, contract.UnavailableDetectMax+time.Second, "Offline", func(evs []sdk.Event) bool { return countEvents[sdk.Offline](evs) > 0 })
	t.Logf("offline reported %v after the gateway was killed", time.Since(killed).Round(time.Millisecond))
	for i := 0; i < 3; i++ {
		if _, err := ac.Send(bg, bob, []byte(fmt.Sprintf("offline %d", i)), sdk.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if p, _ := ac.Pending(bg); len(p) != 3 {
		t.Fatalf("%d pending while offline, want 3", len(p))
	}
	if err := set.Start(bg, svc.Gateway); err != nil {
		t.Fatal(err)
	}
	ar.wait(t, 30*time.Second, "4 Committed", func(evs []sdk.Event) bool { return countEvents[sdk.Committed](evs) == 4 })
	want := []string{"sent before connecting", "offline 0", "offline 1", "offline 2"}
	br.wait(t, 30*time.Second, "bob's 4 copies", func([]sdk.Event) bool { return len(bodiesFrom(t, bc, conv, alice)) >= len(want) })
	time.Sleep(500 * time.Millisecond) // a late duplicate would show up now
	got := bodiesFrom(t, bc, conv, alice)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bob has %q, want exactly %q", got, want)
	}
	if n := messagesAdded(br.snapshot(), 0); n != len(want) {
		t.Fatalf("bob was told about %d messages, want %d (no duplicates)", n, len(want))
	}
	if p, _ := ac.Pending(bg); len(p) != 0 {
		t.Fatalf("still pending after delivery: %+v", p)
	}
}

// Closing and reopening the store keeps cursor and messages: the reopened client pulls from its
// stored cursor, not from zero, and announces only what is new.
func TestITReopenKeepsCursorAndMessages(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	ac, ar := openIT(t, itConfig(t, set, alice, "a1", t.TempDir()))
	connectIT(t, ac, ar)
	bobCfg := itConfig(t, set, bob, "b1", t.TempDir())
	bc, br := openIT(t, bobCfg)
	connectIT(t, bc, br)
	conv := ac.DirectConversation(bob)
	for i := 0; i < 3; i++ {
		_, _ = ac.Send(bg, bob, []byte(fmt.Sprintf("before %d", i)), sdk.SendOptions{})
	}
	br.wait(t, 30*time.Second, "3 messages", func([]sdk.Event) bool { return len(bodiesFrom(t, bc, conv, alice)) == 3 })
	// Let the pull triggered by the last push commit, then close.
	br.wait(t, 10*time.Second, "cursor past the messages", func([]sdk.Event) bool {
		cur, _ := bc.Cursor(bg)
		return cur.Seq != 0 && bc.Stats().Pulls >= 2
	})
	time.Sleep(300 * time.Millisecond)
	bc.Close()
	closed, err := store.Open(bg, bc.StorePath(), storeIdentity(t, bobCfg))
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := closed.Cursor(bg)
	closed.Close()

	for i := 0; i < 2; i++ {
		_, _ = ac.Send(bg, bob, []byte(fmt.Sprintf("after %d", i)), sdk.SendOptions{})
	}
	ar.wait(t, 20*time.Second, "5 Committed", func(evs []sdk.Event) bool { return countEvents[sdk.Committed](evs) == 5 })

	bc2, br2 := openIT(t, bobCfg)
	if got := len(bodiesFrom(t, bc2, conv, alice)); got != 3 {
		t.Fatalf("reopened store has %d messages before connecting, want 3", got)
	}
	connectIT(t, bc2, br2)
	br2.wait(t, 30*time.Second, "the 2 new messages", func([]sdk.Event) bool { return len(bodiesFrom(t, bc2, conv, alice)) == 5 })
	if st := bc2.Stats(); st.FirstPullCursor != cur.Seq || cur.Seq == 0 {
		t.Fatalf("reopened client pulled from %#x, stored cursor was %#x: it re-downloaded", uint64(st.FirstPullCursor), uint64(cur.Seq))
	}
	time.Sleep(300 * time.Millisecond)
	if n := messagesAdded(br2.snapshot(), 0); n != 2 {
		t.Fatalf("reopened client announced %d messages, want only the 2 new ones", n)
	}
}

// A pushed message is stored and announced once; the pull that follows it moves the stored
// cursor past it and announces nothing again, nor does the pull of the next login. That a push
// alone never moves the cursor is the engine's rule, held by sdk's
// TestPushStoresButNeverMovesTheCursor against a fake gateway: the hook that turns the
// automatic pull off is internal to the sdk module (ADR-0031).
func TestITPushThenPullAnnouncesOnce(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	ac, ar := openIT(t, itConfig(t, set, alice, "a1", t.TempDir()))
	connectIT(t, ac, ar)
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)
	before, _ := bc.Cursor(bg)
	if _, err := ac.Send(bg, bob, []byte("pushed"), sdk.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	br.wait(t, 20*time.Second, "the pushed message", func(evs []sdk.Event) bool { return messagesAdded(evs, store.SourcePush) == 1 })
	br.wait(t, 20*time.Second, "the pull after the push", func([]sdk.Event) bool {
		cur, _ := bc.Cursor(bg)
		return cur.Seq > before.Seq
	})
	// Reconnecting pulls again; nothing is announced twice.
	bc.Disconnect()
	connectIT(t, bc, br)
	moved, _ := bc.Cursor(bg)
	if moved.Seq <= before.Seq {
		t.Fatalf("the pull did not move the cursor: %#x", uint64(moved.Seq))
	}
	if n := messagesAdded(br.snapshot(), 0); n != 1 {
		t.Fatalf("%d MessagesAdded, want 1 (the pulled copy is a duplicate)", n)
	}
}

// KICKED{REPLACED}: the old client gets Kicked, stops and never reconnects on its own.
func TestITKickEndsTheOldClient(t *testing.T) {
	set := deployment(t)
	u := newUser()
	old, or := openIT(t, itConfig(t, set, u, "same-device", t.TempDir()))
	connectIT(t, old, or)
	fresh, fr := openIT(t, itConfig(t, set, u, "same-device", t.TempDir()))
	connectIT(t, fresh, fr)
	or.wait(t, 10*time.Second, "Kicked", func(evs []sdk.Event) bool {
		for _, ev := range evs {
			if k, ok := ev.(sdk.Kicked); ok && k.Reason == contract.KickReplaced && !k.Reconnect {
				return true
			}
		}
		return false
	})
	or.wait(t, 5*time.Second, "a final Offline", func(evs []sdk.Event) bool {
		for _, ev := range evs {
			if o, ok := ev.(sdk.Offline); ok && !o.Retry {
				return true
			}
		}
		return false
	})
	time.Sleep(2 * time.Second) // several backoff periods: a reconnect would kick the new client
	if n := old.Stats().Connects; n != 1 {
		t.Fatalf("the replaced client authenticated %d times, want 1", n)
	}
	if countEvents[sdk.Kicked](fr.snapshot()) != 0 {
		t.Fatal("the new client was kicked back")
	}
}

// History paging through the SDK (PULL_HISTORY OLDER and NEWER).
func TestITHistoryPaging(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	ac, ar := openIT(t, itConfig(t, set, alice, "a1", t.TempDir()))
	connectIT(t, ac, ar)
	for i := 0; i < 5; i++ {
		_, _ = ac.Send(bg, bob, []byte(fmt.Sprintf("h%d", i)), sdk.SendOptions{})
	}
	ar.wait(t, 20*time.Second, "5 Committed", func(evs []sdk.Event) bool { return countEvents[sdk.Committed](evs) == 5 })
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, bc, br)
	conv := bc.DirectConversation(alice)
	newest, err := bc.History(bg, conv, 0, sdk.Older, 2)
	if err != nil || !newest.FromServer || len(newest.Messages) != 2 || !newest.HasMore ||
		string(newest.Messages[0].Body) != "h3" || string(newest.Messages[1].Body) != "h4" {
		t.Fatalf("OLDER from the newest: %+v %v", newest, err)
	}
	older, err := bc.History(bg, conv, newest.Messages[0].Seq, sdk.Older, 10)
	if err != nil || len(older.Messages) != 3 || older.HasMore || string(older.Messages[0].Body) != "h0" {
		t.Fatalf("OLDER page: %+v %v", older, err)
	}
	newer, err := bc.History(bg, conv, older.Messages[0].Seq, sdk.Newer, 2)
	if err != nil || len(newer.Messages) != 2 || string(newer.Messages[0].Body) != "h1" {
		t.Fatalf("NEWER page: %+v %v", newer, err)
	}
}
