package e2e

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/inspect"
	"github.com/qim-dev/qim/wire"
)

// NeedsPush: the scenario needs a NotificationService calling the Set's push stand-ins.
const NeedsPush = "a NotificationService calling the harness's push provider stand-ins"

// pushWithin bounds how long a notification may take to reach a stand-in: the batch loop's poll
// plus a provider round trip on loopback.
const pushWithin = 10 * time.Second

// RegisterPushToken registers the connection's device for offline push.
func (c *Client) RegisterPushToken(ctx context.Context, platform contract.PushPlatform, token, appID string) (*qimv1.PushTokenAck, error) {
	var a qimv1.PushTokenAck
	req := &qimv1.RegisterPushToken{Platform: uint32(platform), Token: token, AppId: appID}
	if err := c.Call(ctx, contract.OpRegisterPushToken, req, contract.OpPushTokenAck, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// Logout sends LOGOUT and waits for the server to close the connection (its acknowledgement).
func (c *Client) Logout(ctx context.Context) error {
	payload, err := proto.Marshal(&qimv1.Logout{})
	if err != nil {
		return err
	}
	if err := c.w.Send(ctx, wire.Message{Opcode: contract.OpLogout, RequestID: c.nextID.Add(1), Payload: payload}); err != nil {
		return fmt.Errorf("e2e: send LOGOUT: %w", err)
	}
	select {
	case <-c.closed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("e2e: the server did not close after LOGOUT: %w", ctx.Err())
	}
}

// registerDevice logs user's device in, registers its token and drops the connection without
// LOGOUT, as a phone whose app went to the background: the device is offline and registered.
func (e *Env) registerDevice(ctx context.Context, user contract.UserID, device string, platform contract.PushPlatform, token string) error {
	c, _, err := e.Login(ctx, user, device, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	a, err := c.RegisterPushToken(ctx, platform, token, "dev.qim.gate")
	if err != nil {
		return fmt.Errorf("REGISTER_PUSH_TOKEN of %s: %w", device, err)
	}
	if !a.GetRegistered() {
		return fmt.Errorf("PUSH_TOKEN_ACK of %s: registered=false", device)
	}
	return nil
}

// Alice's phone (APNs) and tablet (FCM) register and go offline. Every message bob sends then
// wakes each of them exactly once, with the conversation and message id and no body; a token
// the provider stops accepting is removed; an online laptop stops the pushes; LOGOUT removes
// the device's registration.
func scenarioOfflinePush(ctx context.Context, e *Env) error {
	p := e.Set.Push()
	alice, bob := e.User(), e.User()
	phone, tablet := fmt.Sprintf("%064x", uint64(alice)), "fcm-"+fmt.Sprint(alice) // APNs tokens are hex
	if err := e.registerDevice(ctx, alice, "phone", contract.PushAPNs, phone); err != nil {
		return err
	}
	if err := e.registerDevice(ctx, alice, "tablet", contract.PushFCM, tablet); err != nil {
		return err
	}
	b, _, err := e.Login(ctx, bob, "phone", 0)
	if err != nil {
		return err
	}
	defer b.Close()
	// The NotificationService learns from qim.presence that alice's devices went offline a
	// moment after their connections closed: send until a first message is pushed.
	probes, err := sendUntil(ctx, b, alice, "first push", func(mid string) bool { return p.APNs.Count(mid, phone) > 0 })
	if err != nil {
		return fmt.Errorf("%w; the stand-in saw %d requests; notify's log:\n%s", err, p.APNs.Attempts(), e.Set.LogTail(svc.Notify, 15))
	}
	var mids []string
	for i := range 3 {
		ack, err := b.Send(ctx, alice, NewCmid(), fmt.Appendf(nil, "while you were away %d", i))
		if err != nil {
			return err
		}
		mids = append(mids, hex.EncodeToString(ack.GetMessageId()))
	}
	if err := pushedOnce(ctx, p, mids, phone, tablet); err != nil {
		return err
	}
	// The badge is alice's unread total (Session.Badge) when the last one was notified: every
	// message bob sent her so far.
	for _, d := range p.APNs.Deliveries() {
		if d.MessageID == mids[len(mids)-1] && d.Badge != probes+len(mids) {
			return fmt.Errorf("badge of the last push %d, want %d (alice's unread)", d.Badge, probes+len(mids))
		}
	}
	return pushRefusalsAndPresence(ctx, e, p, b, alice, phone, tablet)
}

// pushedOnce waits until each message reached both devices, then checks that none arrived twice.
func pushedOnce(ctx context.Context, p *svc.PushStandIns, mids []string, phone, tablet string) error {
	wctx, cancel := context.WithTimeout(ctx, pushWithin)
	defer cancel()
	if err := waitFor(wctx, "every message pushed to the phone and the tablet", func() (bool, error) {
		for _, m := range mids {
			if p.APNs.Count(m, phone) == 0 || p.FCM.Count(m, tablet) == 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would come from the same batch or a replay
	for _, m := range mids {
		if n, k := p.APNs.Count(m, phone), p.FCM.Count(m, tablet); n != 1 || k != 1 {
			return fmt.Errorf("message %s pushed %d times to the phone, %d to the tablet, want once each", m, n, k)
		}
	}
	for _, d := range p.APNs.Deliveries() {
		if d.Token == phone && (d.Conversation == "" || d.Sender == 0) {
			return fmt.Errorf("a push without coordinates: %+v", d)
		}
	}
	return nil
}

// pushRefusalsAndPresence: a refused token is forgotten, an online device stops the pushes, and
// LOGOUT removes the registration.
func pushRefusalsAndPresence(ctx context.Context, e *Env, p *svc.PushStandIns, b *Client, alice contract.UserID, phone, tablet string) error {
	rdb, err := e.redisCore()
	if err != nil {
		return err
	}
	defer rdb.Close()
	key := inspect.PushRegistrationKey(e.Tenant, alice)
	p.FCM.Invalidate(tablet)
	if _, err := sendUntil(ctx, b, alice, "the tablet's refused token removed", func(string) bool {
		ok, err := rdb.HExists(ctx, key, "tablet").Result()
		return err == nil && !ok
	}); err != nil {
		return err
	}
	laptop, _, err := e.Login(ctx, alice, "laptop", 0)
	if err != nil {
		return err
	}
	defer laptop.Close()
	if err := notPushedWhileOnline(ctx, b, alice, func(mid string) bool { return p.APNs.Count(mid, phone) > 0 }); err != nil {
		return err
	}
	ph, _, err := e.Login(ctx, alice, "phone", 0)
	if err != nil {
		return err
	}
	if err := ph.Logout(ctx); err != nil {
		return err
	}
	if ok, err := rdb.HExists(ctx, key, "phone").Result(); err != nil || ok {
		return fmt.Errorf("the phone's registration after LOGOUT: present=%v, err=%v", ok, err)
	}
	return nil
}

// sendUntil sends bob→alice messages until cond holds for one of them (or for the state after
// one), at most 30 tries, and returns how many it sent.
func sendUntil(ctx context.Context, b *Client, to contract.UserID, what string, cond func(mid string) bool) (int, error) {
	for i := range 30 {
		ack, err := b.Send(ctx, to, NewCmid(), fmt.Appendf(nil, "probe %d", i))
		if err != nil {
			return i, err
		}
		mid := hex.EncodeToString(ack.GetMessageId())
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if cond(mid) {
				return i + 1, nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return 30, fmt.Errorf("%s: not after 30 messages", what)
}

// notPushedWhileOnline: once the NotificationService sees the laptop online (a moment after
// its login), a message is not pushed; checked by sending until one is not pushed within 2 s.
func notPushedWhileOnline(ctx context.Context, b *Client, to contract.UserID, pushed func(string) bool) error {
	for i := range 5 {
		ack, err := b.Send(ctx, to, NewCmid(), fmt.Appendf(nil, "online %d", i))
		if err != nil {
			return err
		}
		mid := hex.EncodeToString(ack.GetMessageId())
		time.Sleep(2 * time.Second)
		if !pushed(mid) {
			return nil
		}
	}
	return errors.New("messages are still pushed while a device of the user is online")
}
