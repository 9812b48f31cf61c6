package sdkit

// Helpers of the group integration tests (groups_it_test.go).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/sdk"
)

// itGroupMember is one connected client of a group test.
type itGroupMember struct {
	user contract.UserID
	c    *sdk.Client
	r    *recorder
}

func itMembers(t *testing.T, set *svc.Set, n int) []itGroupMember {
	t.Helper()
	out := make([]itGroupMember, n)
	for i := range out {
		u := newUser()
		c, r := openIT(t, itConfig(t, set, u, "d1", t.TempDir()))
		connectIT(t, c, r)
		out[i] = itGroupMember{user: u, c: c, r: r}
	}
	return out
}

// createIT creates a group owned by m and waits for GROUP_CREATED.
func createIT(t *testing.T, m itGroupMember, name string, members ...contract.UserID) contract.ConversationID {
	t.Helper()
	g, err := m.c.CreateGroup(bg, name, members)
	if err != nil {
		t.Fatal(err)
	}
	waitCreated(t, m.r, g.Group)
	return g.Group
}

// waitCreated waits for the answer to a create and fails at once on a refusal.
func waitCreated(t *testing.T, r *recorder, group contract.ConversationID) {
	t.Helper()
	var failed *sdk.GroupCreateFailed
	r.wait(t, 30*time.Second, "GroupCreated", func(evs []sdk.Event) bool {
		for _, ev := range evs {
			switch e := ev.(type) {
			case sdk.GroupCreated:
				if e.Group == group {
					return true
				}
			case sdk.GroupCreateFailed:
				if e.Group == group {
					failed = &e
					return true
				}
			}
		}
		return false
	})
	if failed != nil {
		t.Fatalf("create of %s refused: %v", group, failed.Err)
	}
}

// membershipOf lists the membership events a client announced for group, in announcement order.
func membershipOf(r *recorder, group contract.ConversationID) []sdk.MembershipChanged {
	var out []sdk.MembershipChanged
	for _, ev := range r.snapshot() {
		if e, ok := ev.(sdk.MembershipChanged); ok && e.Group == group {
			out = append(out, e)
		}
	}
	return out
}

func waitMembership(t *testing.T, m itGroupMember, group contract.ConversationID, n int) []sdk.MembershipChanged {
	t.Helper()
	m.r.wait(t, 30*time.Second, fmt.Sprintf("%d membership events", n), func([]sdk.Event) bool {
		return len(membershipOf(m.r, group)) >= n
	})
	return membershipOf(m.r, group)
}

// textsFrom is bodiesFrom without the membership CONTROL messages the sender's changes wrote.
func textsFrom(t *testing.T, c *sdk.Client, conv contract.ConversationID, sender contract.UserID) []string {
	t.Helper()
	msgs, _, err := c.LocalMessages(bg, conv, 0, sdk.Newer, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Sender == sender && m.Type != contract.MessageControl {
			out = append(out, string(m.Body))
		}
	}
	return out
}

func groupBytes(g contract.ConversationID) []byte { return contract.U128(g).AppendBytes(nil) }

// admin calls the writer's GroupAdmin RPC, as qimctl membership does.
func admin(t *testing.T, set *svc.Set, req *internalv1.AdminGroupRequest) *internalv1.AdminGroupOutcome {
	t.Helper()
	creds, err := set.AdminDialOption()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(set.Addrs.Writer, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	req.TenantId = contract.TenantID{}.AppendBytes(nil)
	res, err := internalv1.NewGroupAdminClient(cc).AdminGroup(ctx, req)
	if err != nil || res.GetErrorCode() != 0 {
		t.Fatalf("AdminGroup %v: %v %v", req, err, res)
	}
	return res
}
