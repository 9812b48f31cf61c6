package sdkit

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// A group message's "read by" through the SDK: bob reads it (MarkRead, sent to the server in the
// background), carol does not; alice's ReadReceipts answers 1 of 2 with both watermarks. A direct
// conversation is refused ErrInvalid before anything is sent.
func TestITGroupReadReceipts(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	group := createIT(t, alice, "readers", bob.user, carol.user)
	if _, err := alice.c.SendGroup(bg, group, []byte("did you read this?"), sdk.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	cv := waitConversation(t, bob.c, bob.r, group, "the message at bob", func(cv sdk.Conversation) bool { return cv.Unread == 1 })
	if _, err := bob.c.MarkRead(bg, group, cv.LatestSeq); err != nil {
		t.Fatal(err)
	}
	var got sdk.GroupReceipts
	bob.r.wait(t, 30*time.Second, "bob's read in alice's receipts", func([]sdk.Event) bool {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		var err error
		got, err = alice.c.ReadReceipts(ctx, group, cv.LatestSeq)
		if err != nil {
			t.Fatal(err)
		}
		return got.ReadCount == 1
	})
	want := map[contract.UserID]contract.ConversationSeq{bob.user: cv.LatestSeq, carol.user: 0}
	if got.Audience != 2 || len(got.Reads) != 2 || got.Reads[0].User > got.Reads[1].User {
		t.Fatalf("receipts %+v, want read by 1 of 2, two members ascending", got)
	}
	for _, m := range got.Reads {
		if w, ok := want[m.User]; !ok || m.Read != w {
			t.Fatalf("member %d read %d, want %d (listed %v)", m.User, m.Read, w, ok)
		}
	}
	if _, err := alice.c.ReadReceipts(bg, contract.DirectConversationID(contract.TenantID{}, alice.user, bob.user), 1); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("a direct conversation: %v, want ErrInvalid", err)
	}
}

// A reaction through the SDK: bob reacts to alice's message from his stored copy; bob's answer
// counts it as his, alice's SDK announces ReactionChanged with the same count, and a repeat
// changes nothing.
func TestITReactions(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 2)
	alice, bob := ms[0], ms[1]
	if _, err := alice.c.Send(bg, bob.user, []byte("react to me"), sdk.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	conv := bob.c.DirectConversation(alice.user)
	var m sdk.Message
	bob.r.wait(t, 30*time.Second, "alice's message at bob", func([]sdk.Event) bool {
		msgs, _, err := bob.c.LocalMessages(bg, conv, 0, sdk.Newer, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range msgs {
			if x.Sender == alice.user {
				m = x
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	rs, changed, err := bob.c.React(ctx, m, "👍", false)
	if err != nil || !changed || len(rs) != 1 || rs[0] != (sdk.Reaction{Key: "👍", Count: 1, Mine: true}) {
		t.Fatalf("React = %+v %v %v, want 👍 1 mine, changed", rs, changed, err)
	}
	alice.r.wait(t, 30*time.Second, "ReactionChanged at alice", func(evs []sdk.Event) bool {
		return slices.ContainsFunc(evs, func(ev sdk.Event) bool {
			e, ok := ev.(sdk.ReactionChanged)
			return ok && e.User == bob.user && e.Seq == m.Seq && len(e.Reactions) == 1 && e.Reactions[0].Count == 1
		})
	})
	if _, changed, err := bob.c.React(ctx, m, "👍", false); err != nil || changed {
		t.Fatalf("a repeated React: changed %v, %v; want unchanged", changed, err)
	}
}

// SetReadReceipts through the SDK: carol withholds hers, so alice's receipts list her withheld
// and out of the count, and carol's own pull is ErrForbidden; sharing again restores both.
func TestITWithheldReceipts(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 2)
	alice, carol := ms[0], ms[1]
	group := createIT(t, alice, "private readers", carol.user)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	if err := carol.c.SetReadReceipts(ctx, false); err != nil {
		t.Fatal(err)
	}
	got, err := alice.c.ReadReceipts(ctx, group, 1)
	if err != nil || len(got.Reads) != 1 || !got.Reads[0].Withheld || got.Audience != 0 {
		t.Fatalf("receipts with carol withholding: %+v %v, want carol withheld, audience 0", got, err)
	}
	if _, err := carol.c.ReadReceipts(ctx, group, 1); !errors.Is(err, sdk.ErrForbidden) {
		t.Fatalf("carol's pull while withholding: %v, want ErrForbidden", err)
	}
	if err := carol.c.SetReadReceipts(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.c.ReadReceipts(ctx, group, 1); err != nil {
		t.Fatalf("carol's pull after sharing again: %v", err)
	}
}
