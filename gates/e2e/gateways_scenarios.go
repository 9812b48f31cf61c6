package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// crossGatewayKickWithin bounds the cross-gateway kick: one produce and one fetch of the old
// gateway's qim.presence follower (ADR-0027), far below it on a healthy deployment.
const crossGatewayKickWithin = 5 * time.Second

// scenarioCrossGatewayOnline: alice on gateway 1 and bob on gateway 2 are both online; each
// one's message reaches the other as a PUSH_EVENTS (the MailboxNode found the peer's gateway
// in qim.presence) and by pull, exactly once.
func scenarioCrossGatewayOnline(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.LoginAt(ctx, e.Gateways[0], alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, _, err := e.LoginAt(ctx, e.Gateways[1], bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	for _, leg := range []struct {
		name     string
		from, to *Client
		peer     contract.UserID
	}{{"gateway 1 to 2", ca, cb, bob}, {"gateway 2 to 1", cb, ca, alice}} {
		ack, err := leg.from.Send(ctx, leg.peer, NewCmid(), []byte(leg.name))
		if err != nil {
			return fmt.Errorf("%s: %w", leg.name, err)
		}
		if err := waitPush(ctx, leg.to, ack.GetMessageId(), 10*time.Second); err != nil {
			return fmt.Errorf("%s: %w", leg.name, err)
		}
		evs, _, err := PullUntil(ctx, leg.to, 0, HasMessage(ack.GetMessageId()))
		if err != nil {
			return fmt.Errorf("%s: %w", leg.name, err)
		}
		if n := CountMessage(evs, ack.GetMessageId()); n != 1 {
			return fmt.Errorf("%s: pulled %d copies, want 1", leg.name, n)
		}
	}
	return nil
}

// scenarioCrossGatewayOffline: bob is offline while alice (gateway 1) writes; he logs in on
// gateway 2, is told of offline data and pulls it; a message sent after that login is pushed
// to him there; he then moves to gateway 1, and the next one follows him.
func scenarioCrossGatewayOffline(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.LoginAt(ctx, e.Gateways[0], alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	ack, err := ca.Send(ctx, bob, NewCmid(), []byte("while you were away"))
	if err != nil {
		return err
	}
	if _, _, err := PullUntil(ctx, ca, 0, HasMessage(ack.GetMessageId())); err != nil {
		return fmt.Errorf("sender copy: %w", err)
	}
	for i, gw := range []string{e.Gateways[1], e.Gateways[0]} {
		var cb *Client
		if i == 0 {
			cb, err = e.LoginToBacklog(ctx, gw, bob, "b1", 10*time.Second)
		} else {
			cb, _, err = e.LoginAt(ctx, gw, bob, "b1", 0)
		}
		if err != nil {
			return err
		}
		err = pushedAfterLogin(ctx, ca, cb, bob, ack.GetMessageId(), fmt.Sprintf("on gateway %d", 2-i))
		cb.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// pushedAfterLogin checks bob (logged in as cb) pulls the waiting message once, then gets a
// new message from alice pushed.
func pushedAfterLogin(ctx context.Context, ca, cb *Client, bob contract.UserID, waiting []byte, where string) error {
	evs, _, err := PullUntil(ctx, cb, 0, HasMessage(waiting))
	if err != nil {
		return fmt.Errorf("%s: pull: %w", where, err)
	}
	if n := CountMessage(evs, waiting); n != 1 {
		return fmt.Errorf("%s: pulled %d copies of the waiting message, want 1", where, n)
	}
	ack, err := ca.Send(ctx, bob, NewCmid(), []byte("now that you are here"))
	if err != nil {
		return err
	}
	if err := waitPush(ctx, cb, ack.GetMessageId(), 10*time.Second); err != nil {
		return fmt.Errorf("%s, after login: %w", where, err)
	}
	return nil
}

// scenarioCrossGatewayKick: a device logged in on gateway 1 logs in again on gateway 2; the old
// session gets KICKED{REPLACED} within crossGatewayKickWithin and closes, the new one lives.
func scenarioCrossGatewayKick(ctx context.Context, e *Env) error {
	took, err := duplicateLogin(ctx, e, e.User(), e.Gateways[0], e.Gateways[1], crossGatewayKickWithin)
	if err != nil {
		return err
	}
	fmt.Printf("    cross-gateway kick arrived %v after the login began\n", took.Round(time.Millisecond))
	return nil
}
