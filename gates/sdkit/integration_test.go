package sdkit

// Integration tests against the real services: the qim binary built from this checkout, one
// process per service (gates/svc), on the package's real Redis + Kafka stack (gates/itest). No
// mocks: every message goes through gateway → writer → Outbox → fanout → dispatch log → mailbox.

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/sdk"
	"github.com/qim-dev/qim/sdk/store"
)

func TestMain(m *testing.M) {
	code := itest.Main(m)
	stopDeployment()
	os.Exit(code)
}

var deploy struct {
	once sync.Once
	set  *svc.Set
	dir  string
	err  error
}

// deployment starts the services once per package (skipping like itest in -short mode) and
// makes sure the gateway runs (a test may have killed it).
func deployment(t *testing.T) *svc.Set {
	t.Helper()
	ep := itest.Endpoints(t)
	deploy.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if deploy.dir, deploy.err = os.MkdirTemp("", "qim-sdk-it-"); deploy.err != nil {
			return
		}
		var bin string
		if bin, deploy.err = svc.Build(ctx, "../..", deploy.dir); deploy.err != nil {
			return
		}
		if deploy.set, deploy.err = svc.New(bin, ep); deploy.err != nil {
			return
		}
		deploy.err = deploy.set.StartAll(ctx)
	})
	if deploy.err != nil {
		t.Fatalf("services: %v", deploy.err)
	}
	if !deploy.set.Running(svc.Gateway) {
		if err := deploy.set.Start(context.Background(), svc.Gateway); err != nil {
			t.Fatal(err)
		}
	}
	return deploy.set
}

func stopDeployment() {
	if deploy.set != nil {
		for i := len(svc.Order) - 1; i >= 0; i-- {
			if deploy.set.Running(svc.Order[i]) {
				_ = deploy.set.Kill(svc.Order[i])
			}
		}
	}
	if deploy.dir != "" {
		_ = os.RemoveAll(deploy.dir)
	}
}

func newUser() contract.UserID { return itest.NewUser() }

// itConfig is a client of user/device on the deployment, storing under dir.
func itConfig(t *testing.T, set *svc.Set, user contract.UserID, device, dir string) sdk.Config {
	t.Helper()
	tok, err := devtoken.Issue([]byte(set.Addrs.TokenSecret), devtoken.Claims{User: user, Device: device,
		ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return sdk.Config{DataDir: dir, Endpoint: contract.Endpoint{Address: set.Addrs.GatewayTCP, Mode: contract.ModeTCP},
		User: user, Device: device, Token: sdk.StaticToken(tok), ReconnectMin: 100 * time.Millisecond, ReconnectMax: time.Second}
}

// recorder drains a client's events so tests can wait for them.
type recorder struct {
	mu     sync.Mutex
	evs    []sdk.Event
	notify chan struct{}
}

func record(c *sdk.Client) *recorder {
	r := &recorder{notify: make(chan struct{}, 1)}
	go func() {
		for ev := range c.Events() {
			r.mu.Lock()
			r.evs = append(r.evs, ev)
			r.mu.Unlock()
			select {
			case r.notify <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

func (r *recorder) snapshot() []sdk.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sdk.Event(nil), r.evs...)
}

// wait blocks until pred holds on the events so far, failing t after d.
func (r *recorder) wait(t *testing.T, d time.Duration, what string, pred func([]sdk.Event) bool) {
	t.Helper()
	deadline := time.After(d)
	for !pred(r.snapshot()) {
		select {
		case <-r.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s; events: %s", d, what, describeEvents(r.snapshot()))
		}
	}
}

func describeEvents(evs []sdk.Event) string {
	s := ""
	for _, ev := range evs {
		switch e := ev.(type) {
		case sdk.MessagesAdded:
			s += " MessagesAdded(" + e.Source.String() + ")"
		case sdk.SyncProgress:
			s += " SyncProgress(" + e.Phase.String() + ")"
		case sdk.Offline:
			s += " Offline"
			if e.Err != nil {
				s += "(" + e.Err.Error() + ")"
			}
		default:
			s += " " + typeName(ev)
		}
	}
	return s
}

func typeName(ev sdk.Event) string {
	switch e := ev.(type) {
	case sdk.Online:
		return "Online"
	case sdk.ConversationsUpdated:
		return "ConversationsUpdated"
	case sdk.Committed:
		return "Committed"
	case sdk.Failed:
		return "Failed"
	case sdk.Kicked:
		return "Kicked"
	case sdk.LocalStoreReset:
		return "LocalStoreReset"
	case sdk.GroupCreated:
		return "GroupCreated"
	case sdk.GroupCreateFailed:
		return "GroupCreateFailed(" + e.Code.String() + ")"
	case sdk.MembershipChanged:
		return "MembershipChanged(" + e.Op.String() + ")"
	}
	return "?"
}

func syncs(evs []sdk.Event) int {
	n := 0
	for _, ev := range evs {
		if p, ok := ev.(sdk.SyncProgress); ok && p.Phase == sdk.SyncDone {
			n++
		}
	}
	return n
}

// bodiesFrom returns the bodies of messages from sender stored locally, in seq order.
func bodiesFrom(t *testing.T, c *sdk.Client, conv contract.ConversationID, sender contract.UserID) []string {
	t.Helper()
	msgs, _, err := c.LocalMessages(context.Background(), conv, 0, store.Newer, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Sender == sender {
			out = append(out, string(m.Body))
		}
	}
	return out
}

func messagesAdded(evs []sdk.Event, src store.Source) int {
	n := 0
	for _, ev := range evs {
		if m, ok := ev.(sdk.MessagesAdded); ok && (src == 0 || m.Source == src) {
			n += len(m.Messages)
		}
	}
	return n
}

func openIT(t *testing.T, cfg sdk.Config) (*sdk.Client, *recorder) {
	t.Helper()
	c, err := sdk.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, record(c)
}

func connectIT(t *testing.T, c *sdk.Client, r *recorder) {
	t.Helper()
	before := syncs(r.snapshot())
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 30*time.Second, "a completed sync", func(evs []sdk.Event) bool { return syncs(evs) > before })
}

// storeIdentity is the identity sdk.Open gives cfg's local store, for opening it with sdk/store
// after the client closed.
func storeIdentity(t *testing.T, cfg sdk.Config) store.Identity {
	t.Helper()
	canonical, err := cfg.Endpoint.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return store.Identity{EndpointScope: contract.EndpointScope(canonical), Tenant: cfg.Tenant, User: cfg.User}
}

func countEvents[T sdk.Event](evs []sdk.Event) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.(T); ok {
			n++
		}
	}
	return n
}

func users(ms []sdk.Member) []contract.UserID {
	out := make([]contract.UserID, len(ms))
	for i, m := range ms {
		out[i] = m.User
	}
	return out
}
