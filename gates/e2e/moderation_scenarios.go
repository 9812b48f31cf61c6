package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/moderationtest"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// NeedsModeration: the scenario needs writers that put svc.ModeratedTenant's SENDs to the Set's
// moderation stand-in.
const NeedsModeration = "writers calling the harness's moderation stand-in"

// tenantLogin logs user's device in, in tenant, at the gateway Login would use.
func (e *Env) tenantLogin(ctx context.Context, tenant contract.TenantID, user contract.UserID, device string) (*Client, error) {
	return e.tenantLoginAt(ctx, e.GatewayOf(user), tenant, user, device)
}

// tenantLoginAt logs user's device in, in tenant, at gateway, with a dev token good for an hour.
func (e *Env) tenantLoginAt(ctx context.Context, gateway string, tenant contract.TenantID, user contract.UserID, device string) (*Client, error) {
	tok, err := devtoken.Issue(e.Secret, devtoken.Claims{Tenant: tenant, User: user, Device: device,
		ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		return nil, err
	}
	c, _, err := e.authAt(ctx, gateway, tok, device)
	return c, err
}

// The pre-send hook: a SEND it rejects is refused REJECTED with its reason and commits nothing, a
// SEND it rewrites is delivered rewritten, another tenant's SENDs are not put to it, and while it
// is down (fail-closed) a SEND is refused UNAVAILABLE and goes through, with the same
// client_message_id, once it is back. Room SENDs go through it too.
func scenarioModeration(ctx context.Context, e *Env) error {
	from, to := e.User(), e.User()
	c, err := e.tenantLogin(ctx, svc.ModeratedTenant, from, "phone")
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Send(ctx, to, NewCmid(), []byte(moderationtest.RejectPrefix+" offer"))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != contract.ErrCodeRejected || se.Reason != moderationtest.RejectReason {
		return fmt.Errorf("a SEND the hook rejects: %v, want REJECTED with reason %q", err, moderationtest.RejectReason)
	}
	ack, err := c.Send(ctx, to, NewCmid(), []byte(moderationtest.RewriteFrom))
	if err != nil {
		return fmt.Errorf("a SEND the hook rewrites: %w", err)
	}
	if ack.GetConversationSeq() != 1 {
		return fmt.Errorf("the first committed message has seq %d: the rejected SEND took a sequence", ack.GetConversationSeq())
	}
	if err := hookDownThenBack(ctx, e, c, to); err != nil {
		return err
	}
	if err := receivedAsModerated(ctx, e, to); err != nil {
		return err
	}
	if err := roomModerated(ctx, c); err != nil {
		return err
	}
	other, err := e.tenantLogin(ctx, contract.TenantID{Lo: 0x0e2e}, from, "phone")
	if err != nil {
		return err
	}
	defer other.Close()
	if _, err := other.Send(ctx, to, NewCmid(), []byte(moderationtest.RejectPrefix+" elsewhere")); err != nil {
		return fmt.Errorf("another tenant's SEND the hook would reject: %w, want it not moderated", err)
	}
	return nil
}

// hookDownThenBack: fail-closed refuses UNAVAILABLE while the hook is down; the same SEND is
// committed once it answers again.
func hookDownThenBack(ctx context.Context, e *Env, c *Client, to contract.UserID) error {
	e.Set.Moderation().SetDown(true)
	defer e.Set.Moderation().SetDown(false)
	cmid := NewCmid()
	if _, err := c.Send(ctx, to, cmid, []byte("while down")); !isCode(err, contract.ErrCodeUnavailable) {
		return fmt.Errorf("a SEND while the hook is down: %v, want UNAVAILABLE (fail-closed)", err)
	}
	e.Set.Moderation().SetDown(false)
	if _, err := c.Send(ctx, to, cmid, []byte("while down")); err != nil {
		return fmt.Errorf("the same SEND once the hook is back: %w", err)
	}
	return nil
}

// receivedAsModerated: the peer holds the rewritten body and the retried one, nothing else.
func receivedAsModerated(ctx context.Context, e *Env, to contract.UserID) error {
	rc, err := e.tenantLogin(ctx, svc.ModeratedTenant, to, "phone")
	if err != nil {
		return err
	}
	defer rc.Close()
	evs, _, err := PullUntil(ctx, rc, 0, func(evs []*qimv1.MailboxEvent) bool { return len(evs) >= 2 })
	if err != nil {
		return fmt.Errorf("the peer's mailbox: %w", err)
	}
	time.Sleep(500 * time.Millisecond) // a rejected SEND that was committed would arrive with them
	more, _, err := PullUntil(ctx, rc, 0, func([]*qimv1.MailboxEvent) bool { return true })
	if err != nil {
		return err
	}
	if len(more) != 2 || string(evs[0].GetBody()) != moderationtest.RewriteTo || string(evs[1].GetBody()) != "while down" {
		bodies := []string{}
		for _, ev := range more {
			bodies = append(bodies, string(ev.GetBody()))
		}
		return fmt.Errorf("the peer received %q, want [%q %q]", bodies, moderationtest.RewriteTo, "while down")
	}
	return nil
}

// roomModerated: a room SEND the hook rejects is refused REJECTED and reaches no member; one it
// rewrites is broadcast rewritten, as the only event of the room.
func roomModerated(ctx context.Context, c *Client) error {
	room := NewRoomID()
	if _, err := c.JoinRoom(ctx, room, nil); err != nil {
		return err
	}
	_, err := c.SendRoom(ctx, room, NewCmid(), []byte(moderationtest.RejectPrefix+" in a room"))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != contract.ErrCodeRejected || se.Reason != moderationtest.RejectReason {
		return fmt.Errorf("a room SEND the hook rejects: %v, want REJECTED with reason %q", err, moderationtest.RejectReason)
	}
	ack, err := c.SendRoom(ctx, room, NewCmid(), []byte(moderationtest.RewriteFrom))
	if err != nil {
		return fmt.Errorf("a room SEND the hook rewrites: %w", err)
	}
	evs, err := c.RoomEventsThrough(ctx, room, ack.GetConversationSeq())
	if err != nil {
		return err
	}
	if len(evs) != 1 || string(evs[0].GetBody()) != moderationtest.RewriteTo {
		bodies := []string{}
		for _, ev := range evs {
			bodies = append(bodies, string(ev.GetBody()))
		}
		return fmt.Errorf("the room broadcast %q, want only %q", bodies, moderationtest.RewriteTo)
	}
	return nil
}
