package sdkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/sdk"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// trimMailbox empties a user's mailbox the way retention does, through the MailboxStore's own
// trim (services/mailbox/mailboxstore, its trim.lua) against the mailbox Redis: it removes the day
// buckets and raises the trim mark, exactly what a device offline beyond
// contract.MailboxRetention meets. Copying the mark-writing into this test was rejected: a copy
// would keep passing after the real layout changed. (Running the script file directly no longer
// works either: its keys and arguments are bound by name through the store's Go binding.)
func trimMailbox(t *testing.T, user contract.UserID) {
	t.Helper()
	ep := itest.Endpoints(t)
	shards, err := contract.NewShardCount(ep.DispatchShards)
	if err != nil {
		t.Fatal(err)
	}
	var tenant contract.TenantID
	cutoff := time.Now().UTC().Unix()/86400 + 2 // every day bucket, today's included
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisMailbox})
	defer rdb.Close()
	mark, err := mailboxstore.New(rdb, shards).TrimBefore(bg, tenant, user, cutoff)
	if err != nil || mark == 0 {
		t.Fatalf("trim: mark %v, %v", mark, err)
	}
}

// CURSOR_EXPIRED leads to REBUILD: the device's mailbox was trimmed while it was away with
// messages it never pulled; it resets its cursor, pulls what is left and backfills the
// conversation from history, ending with every message exactly once.
func TestITCursorExpiredRebuild(t *testing.T) {
	set := deployment(t)
	alice, bob := newUser(), newUser()
	ac, ar := openIT(t, itConfig(t, set, alice, "a1", t.TempDir()))
	connectIT(t, ac, ar)
	bobCfg := itConfig(t, set, bob, "b1", t.TempDir())
	bc, br := openIT(t, bobCfg)
	connectIT(t, bc, br)
	conv := ac.DirectConversation(bob)
	for i := 0; i < 3; i++ {
		_, _ = ac.Send(bg, bob, []byte(fmt.Sprintf("r%d", i)), sdk.SendOptions{})
	}
	br.wait(t, 30*time.Second, "3 messages pulled", func([]sdk.Event) bool {
		cur, _ := bc.Cursor(bg)
		return len(bodiesFrom(t, bc, conv, alice)) == 3 && cur.Seq != 0
	})
	time.Sleep(300 * time.Millisecond) // let the last push's pull commit
	bc.Close()
	old, _ := store.Open(bg, bc.StorePath(), storeIdentity(t, bobCfg))
	oldCur, _ := old.Cursor(bg)
	old.Close()

	for i := 3; i < 6; i++ {
		_, _ = ac.Send(bg, bob, []byte(fmt.Sprintf("r%d", i)), sdk.SendOptions{})
	}
	// Another device of bob proves the three are materialized in bob's mailbox before the trim.
	probe, pr := openIT(t, itConfig(t, set, bob, "probe", t.TempDir()))
	connectIT(t, probe, pr)
	pr.wait(t, 30*time.Second, "6 messages on the probe device", func([]sdk.Event) bool { return len(bodiesFrom(t, probe, conv, alice)) == 6 })
	probe.Close()
	trimMailbox(t, bob)

	bc2, br2 := openIT(t, bobCfg)
	connectIT(t, bc2, br2)
	var reset *sdk.LocalStoreReset
	for _, ev := range br2.snapshot() {
		if r, ok := ev.(sdk.LocalStoreReset); ok {
			reset = &r
		}
	}
	if reset == nil || reset.Reason != sdk.ResetCursorExpired || reset.PreviousCursor != oldCur.Seq || reset.Generation != oldCur.Generation+1 {
		t.Fatalf("LocalStoreReset %+v (old cursor %+v)", reset, oldCur)
	}
	got := bodiesFrom(t, bc2, conv, alice)
	if fmt.Sprint(got) != "[r0 r1 r2 r3 r4 r5]" {
		t.Fatalf("after REBUILD bob has %q, want r0..r5 once each in order", got)
	}
	if n := messagesAdded(br2.snapshot(), store.SourceHistory); n != 3 {
		t.Fatalf("%d messages backfilled from history, want the 3 the trim took", n)
	}
	convs, _ := bc2.Conversations(bg)
	if len(convs) != 1 || convs[0].Incomplete || convs[0].Unread != 6 {
		t.Fatalf("conversation after REBUILD: %+v", convs)
	}
	if st := bc2.Stats(); st.Rebuilds != 1 {
		t.Fatalf("%d rebuilds, want 1", st.Rebuilds)
	}
}
