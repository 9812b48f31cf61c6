package notify

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/pushtoken"
	"github.com/qim-dev/qim/services/notify/provider"
	"github.com/qim-dev/qim/services/notify/provider/pushtest"
)

// rig is a deliverer on the stack's core Redis with a webhook stand-in as its only provider.
type rig struct {
	d    *deliverer
	rdb  *redis.Client
	hook *pushtest.Webhook
	user pushtoken.User
}

func newRig(t *testing.T) *rig {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	hook, err := pushtest.StartWebhook()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.Close)
	p, err := provider.NewWebhook(hook.Endpoint(), http.DefaultClient, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RetryMin, cfg.RetryMax, cfg.GiveUp = time.Millisecond, 4*time.Millisecond, time.Hour
	m := newMetrics(obs.NewRegistry("notify-test"))
	d := newDeliverer(cfg, rdb, map[contract.PushPlatform]provider.Provider{contract.PushWebhook: p}, m, slog.Default())
	u := pushtoken.User{Tenant: contract.TenantID{Hi: uint64(time.Now().UnixNano()), Lo: 1}, User: 2}
	return &rig{d: d, rdb: rdb, hook: hook, user: u}
}

// register stores a webhook registration for the rig's user and returns the job of message mid.
func (r *rig) register(t *testing.T, device, token string, mid uint64) job {
	t.Helper()
	reg := pushtoken.Registration{DeviceID: device, Platform: contract.PushWebhook, Token: token}
	if err := pushtoken.Register(context.Background(), r.rdb, r.user.Tenant, r.user.User, reg); err != nil {
		t.Fatal(err)
	}
	msg := message{conversation: contract.DirectConversationID(r.user.Tenant, 1, 2), seq: 3, id: contract.MessageID{Lo: mid}, sender: 1}
	return job{to: offline{user: r.user, msg: msg}, reg: reg, done: pushtoken.DoneKey(r.user.Tenant, msg.id, r.user.User, device)}
}

func midHex(mid uint64) string { return contract.MessageID{Lo: mid}.String() }

// A job is sent once: delivering the same batch again (a replay after a restart) finds its done
// mark and sends nothing.
func TestDeliverSendsEachNotificationOnce(t *testing.T) {
	r := newRig(t)
	j := r.register(t, "phone", "tok-1", 1)
	for range 3 {
		if err := r.d.deliver(context.Background(), []job{j}); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.hook.Count(midHex(1), "tok-1"); n != 1 {
		t.Fatalf("delivered %d times over three deliveries of one batch, want 1", n)
	}
}

// A provider that fails retryably is retried until it accepts, and deliver returns only then.
func TestDeliverRetriesUntilTheProviderAccepts(t *testing.T) {
	r := newRig(t)
	j := r.register(t, "phone", "tok-2", 2)
	r.hook.Fail(http.StatusServiceUnavailable, "")
	done := make(chan error, 1)
	go func() { done <- r.d.deliver(context.Background(), []job{j}) }()
	for r.hook.Attempts() < 3 {
		select {
		case err := <-done:
			t.Fatalf("deliver returned (%v) while the provider still failed", err)
		case <-time.After(time.Millisecond):
		}
	}
	r.hook.Heal()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := r.hook.Count(midHex(2), "tok-2"); n != 1 {
		t.Fatalf("delivered %d times, want 1", n)
	}
}

// A token the provider no longer knows is removed, unless the device registered a new one.
func TestDeliverForgetsARefusedToken(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	old := r.register(t, "phone", "tok-old", 3)
	r.hook.Invalidate("tok-old")
	if err := r.d.deliver(ctx, []job{old}); err != nil {
		t.Fatal(err)
	}
	key := pushtoken.TokenKey(r.user.Tenant, r.user.User)
	if ok, err := r.rdb.HExists(ctx, key, "phone").Result(); err != nil || ok {
		t.Fatalf("refused registration still stored: %v %v", ok, err)
	}
	renewed := r.register(t, "phone", "tok-new", 4)
	stale := old
	stale.done = pushtoken.DoneKey(r.user.Tenant, contract.MessageID{Lo: 5}, r.user.User, "phone")
	if err := r.d.deliver(ctx, []job{stale}); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.rdb.HExists(ctx, key, "phone").Result(); err != nil || !ok {
		t.Fatalf("a refusal of the old token removed the new registration (%v)", err)
	}
	_ = renewed
}
