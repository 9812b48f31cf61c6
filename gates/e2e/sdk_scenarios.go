package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// SDKScenarios are end-to-end scenarios driven through the SDK (package sdk) rather than raw
// frames: they prove the client state machine — local store, cursor, pending sends,
// reconciliation — against the real deployment, the way applications use it.
func SDKScenarios() []Scenario {
	return []Scenario{
		{"sdk-two-clients-converse", scenarioSDKConverse},
		{"sdk-offline-peer-gets-50-in-order-once", scenarioSDKOffline50},
	}
}

// sdkPeer is one SDK client with its event counters.
type sdkPeer struct {
	*sdk.Client
	user contract.UserID
	cfg  sdk.Config
	mu   sync.Mutex
	// announced counts MessagesAdded messages per sender; committed counts Committed events.
	announced map[contract.UserID]int
	committed int
	done      chan struct{}
}

func openSDKPeer(e *Env, user contract.UserID, device, dir string) (*sdkPeer, error) {
	return openSDKPeerAt(e, e.Gateway, user, device, dir)
}

// openSDKPeerAt is openSDKPeer connecting to the given gateway.
func openSDKPeerAt(e *Env, gateway string, user contract.UserID, device, dir string) (*sdkPeer, error) {
	cfg := sdk.Config{DataDir: dir, Endpoint: contract.Endpoint{Address: gateway, Mode: contract.ModeTCP},
		Tenant: e.Tenant, User: user, Device: device, Token: sdk.StaticToken(e.Token(user, device)),
		ReconnectMin: 100 * time.Millisecond, ReconnectMax: 2 * time.Second}
	p := &sdkPeer{user: user, cfg: cfg}
	return p, p.open()
}

func (p *sdkPeer) open() error {
	c, err := sdk.Open(p.cfg)
	if err != nil {
		return err
	}
	p.Client, p.announced, p.committed, p.done = c, map[contract.UserID]int{}, 0, make(chan struct{})
	go func() {
		defer close(p.done)
		for ev := range c.Events() {
			p.mu.Lock()
			switch e := ev.(type) {
			case sdk.MessagesAdded:
				for _, m := range e.Messages {
					p.announced[m.Sender]++
				}
			case sdk.Committed:
				p.committed++
			}
			p.mu.Unlock()
		}
	}()
	return p.Connect(context.Background())
}

func (p *sdkPeer) close() {
	_ = p.Close()
	<-p.done
}

func (p *sdkPeer) counts(from contract.UserID) (announced, committed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.announced[from], p.committed
}

// bodiesFrom lists the locally stored bodies from sender in conversation order.
func (p *sdkPeer) bodiesFrom(ctx context.Context, sender contract.UserID) ([]string, error) {
	msgs, _, err := p.LocalMessages(ctx, p.DirectConversation(sender), 0, sdk.Newer, 100_000)
	var out []string
	for _, m := range msgs {
		if m.Sender == sender {
			out = append(out, string(m.Body))
		}
	}
	return out, err
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("e2e: waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// expectExactly waits until peer holds want from sender, lets a late duplicate arrive, then
// checks the stored bodies are exactly want, in order, and that this client instance announced
// exactly `announced` of them (each new message once).
func expectExactly(ctx context.Context, p *sdkPeer, sender contract.UserID, want []string, announced int) error {
	err := waitFor(ctx, fmt.Sprintf("%d messages at user %d", len(want), p.user), func() (bool, error) {
		got, err := p.bodiesFrom(ctx, sender)
		return len(got) >= len(want), err
	})
	if err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	got, err := p.bodiesFrom(ctx, sender)
	if err != nil {
		return err
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("user %d holds %q from %d, want exactly %q", p.user, got, sender, want)
	}
	if n, _ := p.counts(sender); n != announced {
		return fmt.Errorf("user %d was told about %d messages from %d, want %d (a duplicate or a miss)", p.user, n, sender, announced)
	}
	return nil
}

func sdkDirs(n int) ([]string, func(), error) {
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}
	for i := 0; i < n; i++ {
		d, err := os.MkdirTemp("", "qim-e2e-sdk-")
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, cleanup, nil
}

func bodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

func sendAll(ctx context.Context, p *sdkPeer, to contract.UserID, msgs []string) error {
	for _, b := range msgs {
		if _, err := p.Send(ctx, to, []byte(b), sdk.SendOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func waitCommitted(ctx context.Context, p *sdkPeer, n int) error {
	return waitFor(ctx, fmt.Sprintf("%d committed sends of user %d", n, p.user), func() (bool, error) {
		_, c := p.counts(0)
		return c >= n, nil
	})
}

// scenarioSDKConverse: two SDK clients exchange messages both ways; each side ends with the
// other's messages exactly once, in order, and every own send committed.
func scenarioSDKConverse(ctx context.Context, e *Env) error {
	dirs, cleanup, err := sdkDirs(2)
	if err != nil {
		return err
	}
	defer cleanup()
	alice, err := openSDKPeer(e, e.User(), "sdk-a", dirs[0])
	if err != nil {
		return err
	}
	defer alice.close()
	bob, err := openSDKPeer(e, e.User(), "sdk-b", dirs[1])
	if err != nil {
		return err
	}
	defer bob.close()
	fromAlice, fromBob := bodies("a2b", 5), bodies("b2a", 5)
	if err := errors.Join(sendAll(ctx, alice, bob.user, fromAlice), sendAll(ctx, bob, alice.user, fromBob)); err != nil {
		return err
	}
	if err := errors.Join(waitCommitted(ctx, alice, 5), waitCommitted(ctx, bob, 5)); err != nil {
		return err
	}
	return errors.Join(expectExactly(ctx, bob, alice.user, fromAlice, 5), expectExactly(ctx, alice, bob.user, fromBob, 5))
}

// scenarioSDKOffline50: bob goes offline (client closed, store kept); alice sends 50; bob
// reopens, reconnects and has all 50 in order, none twice.
func scenarioSDKOffline50(ctx context.Context, e *Env) error {
	dirs, cleanup, err := sdkDirs(2)
	if err != nil {
		return err
	}
	defer cleanup()
	alice, err := openSDKPeer(e, e.User(), "sdk-a", dirs[0])
	if err != nil {
		return err
	}
	defer alice.close()
	bob, err := openSDKPeer(e, e.User(), "sdk-b", dirs[1])
	if err != nil {
		return err
	}
	hello := []string{"hello before going offline"}
	if err := sendAll(ctx, alice, bob.user, hello); err != nil {
		return err
	}
	if err := expectExactly(ctx, bob, alice.user, hello, 1); err != nil {
		bob.close()
		return err
	}
	bob.close()
	batch := bodies("offline", 50)
	if err := sendAll(ctx, alice, bob.user, batch); err != nil {
		return err
	}
	if err := waitCommitted(ctx, alice, 51); err != nil {
		return err
	}
	if err := bob.open(); err != nil { // same data dir: same store, cursor and messages
		return err
	}
	defer bob.close()
	// The reopened client announces only the 50 new messages: it resumed from its stored cursor.
	return expectExactly(ctx, bob, alice.user, append(hello, batch...), 50)
}
