package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/presence"
)

// startPresenceGateway starts a gateway that publishes to and follows the stack's qim.presence,
// and waits until its follower reads (its /healthz presence part is green).
func startPresenceGateway(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	ep := itest.Endpoints(t)
	mutate := o.mutate
	o.mutate = func(c *Config) {
		c.KafkaBrokers, c.ShardCount = ep.KafkaBrokers, ep.DispatchShards
		if mutate != nil {
			mutate(c)
		}
	}
	h := startGateway(t, o)
	eventually(t, 30*time.Second, "presence announced and followed", func() bool { return h.svc.presence.ready() == nil })
	return h
}

// A login on gateway B kicks the older session of the same device on gateway A with
// KICKED{REPLACED}, through qim.presence alone; the other device of the user stays.
func TestLoginOnAnotherGatewayKicks(t *testing.T) {
	a := startPresenceGateway(t, harnessOpts{})
	b := startPresenceGateway(t, harnessOpts{})
	id := newIdentity(t, "phone")
	old := a.login(id)
	laptopID := id
	laptopID.device = "laptop"
	laptopID.token = issue(t, laptopID, time.Hour)
	laptop := a.login(laptopID)

	fresh := b.login(id)
	var k qimv1.Kicked
	old.expect(contract.OpKicked, &k)
	if contract.KickReason(k.GetReason()) != contract.KickReplaced {
		t.Fatalf("KICKED reason %d, want REPLACED", k.GetReason())
	}
	old.expectClosed(3 * time.Second)
	fresh.ping()
	laptop.ping()
	if got := testutil.ToFloat64(a.svc.presence.kicks); got != 1 {
		t.Fatalf("gateway A presence kicks = %v, want 1", got)
	}
	if got := testutil.ToFloat64(b.svc.presence.kicks); got != 0 {
		t.Fatalf("gateway B kicked %v of its own sessions", got)
	}
}

// Each gateway announces a boot above the previous start's of its address, and publishes its
// sessions' online and (for the session still registered) offline entries.
func TestPresenceEntriesOfOneGateway(t *testing.T) {
	h := startPresenceGateway(t, harnessOpts{})
	id := newIdentity(t, "phone")
	c := h.login(id)
	c.ping()
	online := testutil.ToFloat64(h.svc.presence.entries.WithLabelValues("online", "ok"))
	if online != 1 {
		t.Fatalf("online entries ok = %v, want 1 (AUTH_OK waits for it)", online)
	}
	replacement := h.login(id) // replaced on the same gateway: the old session writes no offline entry
	replacement.ping()
	_ = replacement.nc.Close()
	eventually(t, 5*time.Second, "one offline entry", func() bool {
		return testutil.ToFloat64(h.svc.presence.entries.WithLabelValues("offline", "ok")) == 1
	})
	if got := testutil.ToFloat64(h.svc.presence.entries.WithLabelValues("boot", "ok")); got != float64(h.svc.shards) {
		t.Fatalf("boot entries = %v, want one per partition (%d)", got, h.svc.shards)
	}
	boot := h.svc.presence.boot
	h2 := startPresenceGateway(t, harnessOpts{mutate: func(c *Config) { c.PushAdvertise = h.svc.presence.self }})
	if h2.svc.presence.boot <= boot {
		t.Fatalf("a later start of %s has boot %d, not above %d", h.svc.presence.self, h2.svc.presence.boot, boot)
	}
}

// The admission race of ADR-0027: another gateway's newer login of a device arriving while a
// login of that device is between its epoch INCR and its register makes the local one stale.
func TestRemoteLoginDuringAdmissionWins(t *testing.T) {
	r := newRegistry()
	k := userKey{contract.TenantID{Lo: 1}, 2}
	end := r.beginAdmission(k, "phone")
	if r.remoteOnline(k, "phone", 8) != nil {
		t.Fatal("nothing registered yet, nothing to kick")
	}
	if _, err := r.register(&session{key: k, device: "phone", epoch: 7}); err != errStaleSession {
		t.Fatalf("register after a newer remote login = %v, want errStaleSession", err)
	}
	end()
	if _, err := r.register(&session{key: k, device: "phone", epoch: 9}); err != nil {
		t.Fatalf("a later login: %v", err)
	}
	if s := r.remoteOnline(k, "phone", 8); s != nil {
		t.Fatal("an older remote login replaced a newer local session")
	}
	if s := r.remoteOnline(k, "phone", 10); s == nil || s.epoch != 9 {
		t.Fatalf("a newer remote login must replace the local session, got %v", s)
	}
	if s := r.remoteOnline(k, "laptop", 10); s != nil {
		t.Fatal("another device was replaced")
	}
}

// The gateway's own entries come back through its follower and must never kick its sessions.
func TestOwnEntriesDoNotKick(t *testing.T) {
	h := startPresenceGateway(t, harnessOpts{})
	id := newIdentity(t, "phone")
	c := h.login(id)
	h.svc.presence.remote([]presence.Entry{{Device: presence.Device{Tenant: id.tenant, User: id.user, DeviceID: id.device},
		Gateway: h.svc.presence.self, Boot: h.svc.presence.boot + 1, Epoch: 1 << 40, Online: true}})
	c.expectSilence(200 * time.Millisecond)
	c.ping()
}

// An online entry lost while the broker was unreachable is published again once it is back, so
// MailboxNodes learn the device is online here and push to it; before, the device got no push
// until it logged in again (the chaos matrix's rolling restart saw its mailbox STALLED).
func TestLostOnlineEntryIsRepublished(t *testing.T) {
	h := startPresenceGateway(t, harnessOpts{})
	st := itest.Stack(t)
	resume := itest.Pause(t, stack.ServerKafka)
	id := newIdentity(t, "phone")
	c := h.login(id) // AUTH_OK after presenceLoginWait: the entry is still unacknowledged
	defer c.nc.Close()
	eventually(t, time.Minute, "the online entry to fail", func() bool {
		return testutil.ToFloat64(h.svc.presence.entries.WithLabelValues("online", "error")) >= 1
	})
	if n := h.svc.presence.retries.pending(); n != 1 {
		t.Fatalf("%d sessions awaiting republish, want 1", n)
	}
	resume()
	eventually(t, time.Minute, "the online entry republished", func() bool {
		return testutil.ToFloat64(h.svc.presence.entries.WithLabelValues("online", "republished")) == 1 &&
			h.svc.presence.retries.pending() == 0
	})
	want := presence.Entry{Device: presence.Device{Tenant: id.tenant, User: id.user, DeviceID: id.device},
		Gateway: h.svc.presence.self, Boot: h.svc.presence.boot}
	var mu sync.Mutex
	var seen bool
	f, err := presence.Follow(context.Background(), st.Endpoints().KafkaBrokers, nil, h.svc.shards, presence.FromStart,
		presence.Hooks{Apply: func(es []presence.Entry) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range es {
				seen = seen || (e.Device == want.Device && e.Online && e.Boot == want.Boot && e.Gateway == want.Gateway)
			}
		}}, []int32{presence.Partition(h.svc.shards, want)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = f.Run(ctx) }()
	eventually(t, 30*time.Second, "the device's online entry in qim.presence", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen
	})
}
