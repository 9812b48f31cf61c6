package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Scenario is one functional end-to-end check.
type Scenario struct {
	Name string
	Run  func(ctx context.Context, e *Env) error
}

// ErrSkipped is returned (wrapped, with the reason) by a scenario that cannot run on this stack;
// the gate reports it SKIPPED, never passed.
var ErrSkipped = errors.New("e2e: scenario skipped")

// NeedsCQL: the scenario needs the CQL archive (a stack started with --with-cql).
const NeedsCQL = "a CQL node"

// NeedsInstances: the scenario needs two instances of each scaled service (--instances 2).
const NeedsInstances = "two instances of each writer, MailboxNode, SessionProjection and gateway"

// needHints says how to get what a scenario needs.
var needHints = map[string]string{NeedsCQL: "run with --with-cql", NeedsInstances: "run with --instances 2",
	NeedsIdP: "the gateway binary predates QIM_AUTH_ISSUERS", NeedsRateLimits: "the gateway binary predates QIM_GATEWAY_RATE_LIMITS",
	NeedsModeration: "the writer binary predates QIM_MODERATION_URL",
	NeedsPush:       "the binary predates qim notify", NeedsFeed: "the binary predates qim notify"}

// needs wraps run so it is skipped, with the reason, on an Env without what it needs.
func needs(what string, run func(context.Context, *Env) error) func(context.Context, *Env) error {
	return func(ctx context.Context, e *Env) error {
		if !e.Has(what) {
			return fmt.Errorf("%w: needs %s (%s)", ErrSkipped, what, needHints[what])
		}
		return run(ctx, e)
	}
}

// Scenarios returns the functional scenarios in run order.
func Scenarios() []Scenario {
	return []Scenario{
		{"auth-and-heartbeat", scenarioAuthHeartbeat},
		{"online-send-ack-push-pull", scenarioOnline},
		{"offline-recipient-pulls-on-login", scenarioOffline},
		{"first-record-of-partition-is-pulled", scenarioOffsetZero},
		{"idempotent-resend-delivers-once", scenarioIdempotent},
		{"lost-ack-reconciles-without-duplicate", scenarioLostAck},
		{"duplicate-login-kicks-old", scenarioKick},
		{"malformed-frame-closes-only-that-connection", scenarioMalformed},
		{"mailbox-killed-mid-run-loses-nothing", scenarioMailboxKill},
		{"history-direction-unset-reads-older", scenarioHistoryDirectionUnset},
		{"body-over-outbox-record-refused-before-commit", scenarioBodyOverOutboxRecord},
	}
}

func scenarioAuthHeartbeat(ctx context.Context, e *Env) error {
	c, ok, err := e.Login(ctx, e.User(), "phone", 0)
	if err != nil {
		return err
	}
	defer c.Close()
	if ok.GetSessionEpoch() == 0 || ok.GetHeartbeatIntervalMs() == 0 {
		return fmt.Errorf("AUTH_OK lacks session_epoch or heartbeat interval: %v", ok)
	}
	pong, err := c.Ping(ctx)
	if err != nil {
		return err
	}
	if pong.GetHeartbeatIntervalMs() == 0 || pong.GetServerTimeMs() == 0 {
		return fmt.Errorf("PONG lacks the server-chosen interval: %v", pong)
	}
	bad, err := Dial(ctx, e.Gateway)
	if err != nil {
		return err
	}
	defer bad.Close()
	// The refusal is an ERROR UNAUTHORIZED before the close (docs/protocol.md 5.3): a bare close
	// would leave a client unable to tell a bad credential from a network fault.
	if _, err := bad.Auth(ctx, "qim1.forged.token", "x", 0); !isCode(err, contract.ErrCodeUnauthorized) {
		return fmt.Errorf("forged token: %v, want ERROR UNAUTHORIZED", err)
	}
	return nil
}

func scenarioOnline(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, _, err := e.Login(ctx, bob, "b1", 0)
	if err != nil {
		return err
	}
	defer cb.Close()
	ack, err := ca.Send(ctx, bob, NewCmid(), []byte("hello bob"))
	if err != nil {
		return err
	}
	if err := waitPush(ctx, cb, ack.GetMessageId(), 10*time.Second); err != nil {
		return err
	}
	evs, cursor, err := PullUntil(ctx, cb, 0, HasMessage(ack.GetMessageId()))
	if err != nil {
		return err
	}
	if cursor == 0 || CountMessage(evs, ack.GetMessageId()) != 1 {
		return fmt.Errorf("pull after push: cursor %d, copies %d", cursor, CountMessage(evs, ack.GetMessageId()))
	}
	again, err := cb.Pull(ctx, cursor)
	if err != nil {
		return err
	}
	if CountMessage(again.GetEntries(), ack.GetMessageId()) != 0 {
		return errors.New("the advanced cursor returned the message again")
	}
	return nil
}

func waitPush(ctx context.Context, c *Client, mid []byte, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		select {
		case p := <-c.Pushes():
			if CountMessage(p.GetEvents(), mid) > 0 {
				return nil
			}
		case <-t.C:
			return errors.New("no PUSH_EVENTS for the message within " + within.String())
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func scenarioOffline(ctx context.Context, e *Env) error {
	alice, bob := e.User(), e.User()
	ca, _, err := e.Login(ctx, alice, "a1", 0)
	if err != nil {
		return err
	}
	defer ca.Close()
	ack, err := ca.Send(ctx, bob, NewCmid(), []byte("while you were away"))
	if err != nil {
		return err
	}
	// The sender's copy proves the message committed; the recipient's shard may lag, so
	// LoginToBacklog retries a first "no".
	if _, _, err := PullUntil(ctx, ca, 0, HasMessage(ack.GetMessageId())); err != nil {
		return fmt.Errorf("sender copy: %w", err)
	}
	cb, err := e.LoginToBacklog(ctx, e.GatewayOf(bob), bob, "b1", 10*time.Second)
	if err != nil {
		return err
	}
	defer cb.Close()
	evs, _, err := PullUntil(ctx, cb, 0, HasMessage(ack.GetMessageId()))
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if string(ev.GetMessageId()) == string(ack.GetMessageId()) && len(ev.GetClientMessageId()) != 0 {
			return errors.New("the recipient's entry carries the sender's client_message_id")
		}
	}
	return nil
}

func isCode(err error, code contract.ErrorCode) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == code
}
