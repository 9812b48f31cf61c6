package e2e

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// GroupScenarios are the group scenarios (issue 17): fan-out to every member, membership
// intervals seen through the mailbox, PULL_HISTORY and the session list, membership CONTROL
// messages, and the refusals (non-members, client CONTROL sends, GROUP_FULL). Each checks the
// content a device receives, not only the absence of errors.
func GroupScenarios() []Scenario {
	return []Scenario{
		{"group-send-reaches-every-member-online-and-offline", scenarioGroupFanout},
		{"group-late-member-sees-nothing-before-join", scenarioGroupLateMember},
		{"group-leaver-reads-up-to-leave-and-nothing-after", scenarioGroupLeaver},
		{"group-rejoined-member-reads-both-intervals-not-the-gap", scenarioGroupRejoin},
		{"group-non-member-refused-without-content", scenarioGroupOutsider},
		{"group-session-row-exact-unread-without-control", scenarioGroupUnread},
		{"group-session-unread-clipped-to-membership", scenarioGroupUnreadClipped},
		{"group-membership-control-messages-in-order", scenarioGroupControlOrder},
		{"group-client-control-send-refused-nothing-committed", scenarioClientControlRefused},
		{"group-full-at-1001-created-at-1000-idempotent", scenarioGroupFull},
	}
}

// devices logs users in and closes every connection the scenario opened when it ends.
type devices struct {
	e    *Env
	open []*Client
}

func (d *devices) login(ctx context.Context, user contract.UserID, device string) (*Client, error) {
	c, _, err := d.e.Login(ctx, user, device, 0)
	if err == nil {
		d.open = append(d.open, c)
	}
	return c, err
}

// logins logs each user in on one device ("main") and returns the connections in order.
func (d *devices) logins(ctx context.Context, users ...contract.UserID) ([]*Client, error) {
	out := make([]*Client, len(users))
	for i, u := range users {
		c, err := d.login(ctx, u, "main")
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

func (d *devices) close() {
	for _, c := range d.open {
		c.Close()
	}
}

// newGroup creates a group from c (logged in as creator) and checks GROUP_CREATED names the
// derived group (so a retry could find it) and that its conversation is the group's.
func newGroup(ctx context.Context, e *Env, c *Client, creator contract.UserID, name string, members ...contract.UserID) (*qimv1.GroupCreated, error) {
	crid := NewRequestID()
	g, err := c.CreateGroup(ctx, crid, name, members...)
	if err != nil {
		return nil, fmt.Errorf("CREATE_GROUP: %w", err)
	}
	want, err := groupIDOf(e, creator, crid)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(g.GetClientRequestId(), crid) || !bytes.Equal(g.GetGroupId(), want) ||
		!bytes.Equal(g.GetConversationId(), want) || g.GetMembershipVersion() == 0 {
		return nil, fmt.Errorf("GROUP_CREATED = %v, want request id %x, group = conversation = %x, a version", g, crid, want)
	}
	return g, nil
}

// scenarioGroupFanout: a group of 4; two members online (one by push), one offline until after
// the send, and the sender's second device: every one gets exactly one byte-identical copy.
func scenarioGroupFanout(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob, carol, dave := e.User(), e.User(), e.User(), e.User()
	cs, err := d.logins(ctx, alice, bob, carol)
	if err != nil {
		return err
	}
	phone, cb, cc := cs[0], cs[1], cs[2]
	g, err := newGroup(ctx, e, phone, alice, "fanout", bob, carol, dave)
	if err != nil {
		return err
	}
	cmid, body := NewCmid(), []byte("hello group of four")
	ack, err := phone.SendGroup(ctx, g.GetGroupId(), cmid, body)
	if err != nil {
		return err
	}
	if !bytes.Equal(ack.GetConversationId(), g.GetConversationId()) || !bytes.Equal(ack.GetClientMessageId(), cmid) {
		return fmt.Errorf("SEND_ACK %v is not for the group conversation %x", ack, g.GetConversationId())
	}
	if err := waitPush(ctx, cb, ack.GetMessageId(), 10*time.Second); err != nil {
		return fmt.Errorf("bob (online): %w", err)
	}
	for _, m := range []struct {
		who string
		c   *Client
	}{{"bob", cb}, {"carol", cc}} {
		evs, _, err := PullUntil(ctx, m.c, 0, HasMessage(ack.GetMessageId()))
		if err != nil {
			return fmt.Errorf("%s: %w", m.who, err)
		}
		if err := checkCopy(m.who, evs, ack, alice, body, nil); err != nil {
			return err
		}
	}
	cd, err := e.LoginToBacklog(ctx, e.GatewayOf(dave), dave, "d1", 10*time.Second)
	if err != nil {
		return fmt.Errorf("dave (offline): %w", err)
	}
	defer cd.Close()
	evs, _, err := PullUntil(ctx, cd, 0, HasMessage(ack.GetMessageId()))
	if err != nil {
		return fmt.Errorf("dave (offline): %w", err)
	}
	if err := checkCopy("dave", evs, ack, alice, body, nil); err != nil {
		return err
	}
	if err := checkCreateSeen("dave", evs, g, alice, bob, carol, dave); err != nil {
		return err
	}
	laptop, err := d.login(ctx, alice, "laptop")
	if err != nil {
		return err
	}
	evs, _, err = PullUntil(ctx, laptop, 0, HasMessage(ack.GetMessageId()))
	if err != nil {
		return fmt.Errorf("alice's laptop: %w", err)
	}
	return checkCopy("alice's laptop (sender's own copy)", evs, ack, alice, body, cmid)
}
