package sdk

// Integration tests against the real services: the qim binary built from this checkout, one
// process per service (gates/svc), on the package's real Redis + Kafka stack (gates/itest). No
// mocks: every message goes through gateway → writer → Outbox → fanout → dispatch log → mailbox.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
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
		if bin, deploy.err = svc.Build(ctx, "..", deploy.dir); deploy.err != nil {
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

var userBase = func() uint64 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return uint64(binary.BigEndian.Uint32(b[:]))<<20 | 1
}()
var userNext atomic.Uint64

func newUser() contract.UserID { return contract.UserID(userBase + userNext.Add(1)) }

// itConfig is a client of user/device on the deployment, storing under dir.
func itConfig(t *testing.T, set *svc.Set, user contract.UserID, device, dir string) Config {
	t.Helper()
	tok, err := devtoken.Issue([]byte(set.Addrs.TokenSecret), devtoken.Claims{User: user, Device: device,
		ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return Config{DataDir: dir, Endpoint: contract.Endpoint{Address: set.Addrs.GatewayTCP, Mode: contract.ModeTCP},
		User: user, Device: device, Token: StaticToken(tok), ReconnectMin: 100 * time.Millisecond, ReconnectMax: time.Second}
}

// recorder drains a client's events so tests can wait for them.
type recorder struct {
	mu     sync.Mutex
	evs    []Event
	notify chan struct{}
}

func record(c *Client) *recorder {
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

func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

// wait blocks until pred holds on the events so far, failing t after d.
func (r *recorder) wait(t *testing.T, d time.Duration, what string, pred func([]Event) bool) {
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

func describeEvents(evs []Event) string {
	s := ""
	for _, ev := range evs {
		switch e := ev.(type) {
		case MessagesAdded:
			s += " MessagesAdded(" + e.Source.String() + ")"
		case SyncProgress:
			s += " SyncProgress(" + e.Phase.String() + ")"
		case Offline:
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

func typeName(ev Event) string {
	switch e := ev.(type) {
	case Online:
		return "Online"
	case ConversationsUpdated:
		return "ConversationsUpdated"
	case Committed:
		return "Committed"
	case Failed:
		return "Failed"
	case Kicked:
		return "Kicked"
	case LocalStoreReset:
		return "LocalStoreReset"
	case GroupCreated:
		return "GroupCreated"
	case GroupCreateFailed:
		return "GroupCreateFailed(" + e.Code.String() + ")"
	case MembershipChanged:
		return "MembershipChanged(" + e.Op.String() + ")"
	}
	return "?"
}

func syncs(evs []Event) int {
	n := 0
	for _, ev := range evs {
		if p, ok := ev.(SyncProgress); ok && p.Phase == SyncDone {
			n++
		}
	}
	return n
}

// bodiesFrom returns the bodies of messages from sender stored locally, in seq order.
func bodiesFrom(t *testing.T, c *Client, conv contract.ConversationID, sender contract.UserID) []string {
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

func messagesAdded(evs []Event, src store.Source) int {
	n := 0
	for _, ev := range evs {
		if m, ok := ev.(MessagesAdded); ok && (src == 0 || m.Source == src) {
			n += len(m.Messages)
		}
	}
	return n
}

func openIT(t *testing.T, cfg Config) (*Client, *recorder) {
	t.Helper()
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, record(c)
}

func connectIT(t *testing.T, c *Client, r *recorder) {
	t.Helper()
	before := syncs(r.snapshot())
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 30*time.Second, "a completed sync", func(evs []Event) bool { return syncs(evs) > before })
}
