package sdkit

import (
	"context"
	"errors"
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
