package gateway

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

func TestAuthOKAndSessionEpochMovesForward(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	h.mailbox.offline.Store(true)
	id := newIdentity(t, "phone")

	c := dialTCP(t, h.addrs.TCP)
	ok := c.auth(id.token, 0x0001_0000_0000_0007)
	if ok.GetUserId() != uint64(id.user) || ok.GetSessionEpoch() == 0 || !ok.GetHasOfflineData() {
		t.Fatalf("AUTH_OK = %v", ok)
	}
	if ok.GetHeartbeatIntervalMs() != uint32(contract.HeartbeatStart/time.Millisecond) ||
		ok.GetHeartbeatTimeoutMs() != ok.GetHeartbeatIntervalMs()*5/2 {
		t.Fatalf("heartbeat interval/timeout = %d/%d", ok.GetHeartbeatIntervalMs(), ok.GetHeartbeatTimeoutMs())
	}
	if skew := time.Since(time.UnixMilli(ok.GetServerTimeMs())); skew < 0 || skew > 5*time.Second {
		t.Fatalf("server_time_ms off by %v", skew)
	}
	q := h.mailbox.lastQuery()
	tb := id.tenant.Bytes()
	if q.GetCursor() != 0x0001_0000_0000_0007 || q.GetUserId() != uint64(id.user) || q.GetDeviceId() != "phone" || string(q.GetTenantId()) != string(tb[:]) {
		t.Fatalf("HasOffline query = %v, want the token's identity and the request's cursor", q)
	}

	// Every later login of the device gets a strictly larger epoch, also after the old one left.
	prev := ok.GetSessionEpoch()
	for i := 0; i < 3; i++ {
		c2 := dialTCP(t, h.addrs.TCP)
		got := c2.auth(id.token, 0).GetSessionEpoch()
		if got <= prev {
			t.Fatalf("login %d: session_epoch %d not above %d", i, got, prev)
		}
		prev = got
		_ = c2.nc.Close()
	}
	// Another device of the same user has its own counter.
	other := id
	other.device = "tablet"
	other.token = issue(t, other, time.Hour)
	if e := dialTCP(t, h.addrs.TCP).auth(other.token, 0).GetSessionEpoch(); e != 1 {
		t.Fatalf("first epoch of a new device = %d, want 1", e)
	}
	if got := testutil.ToFloat64(h.svc.m.auths); got != 5 { // five logins, each counted before its AUTH_OK
		t.Fatalf("qim_gateway_auths_total = %v", got)
	}
}

func TestAuthRefused(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	id := newIdentity(t, "d1")
	wrongTenant := id.tenant
	wrongTenant.Lo++
	wt := wrongTenant.Bytes()
	forged, _ := devtoken.Issue([]byte("another-secret-0123456789"), devtoken.Claims{Tenant: id.tenant, User: id.user, Device: "d1", ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
	cases := []struct {
		name   string
		op     contract.Opcode
		req    proto.Message
		reason string
	}{
		{"first frame not AUTH", contract.OpPing, &qimv1.Ping{ClientTimeMs: 1}, "not_auth"},
		{"send before AUTH", contract.OpSend, &qimv1.SendRequest{ClientMessageId: make([]byte, 16)}, "not_auth"},
		{"forged signature", contract.OpAuth, &qimv1.AuthRequest{Token: forged}, "bad_signature"},
		{"expired", contract.OpAuth, &qimv1.AuthRequest{Token: issue(t, id, -time.Second)}, "expired"},
		{"garbage token", contract.OpAuth, &qimv1.AuthRequest{Token: "qim1.not-a-token"}, "malformed_token"},
		{"empty token", contract.OpAuth, &qimv1.AuthRequest{}, "malformed_token"},
		{"tenant mismatch", contract.OpAuth, &qimv1.AuthRequest{Token: id.token, TenantId: wt[:]}, "tenant_mismatch"},
		{"device mismatch", contract.OpAuth, &qimv1.AuthRequest{Token: id.token, DeviceId: "d2"}, "device_mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(h.svc.m.authFailures.WithLabelValues(tc.reason))
			c := dialTCP(t, h.addrs.TCP)
			reqID := c.write(tc.op, tc.req)
			e := c.expectError(contract.ErrCodeUnauthorized, reqID)
			if strings.Contains(e.GetMessage(), id.token) {
				t.Fatal("the error echoes the token")
			}
			c.expectClosed(3 * time.Second)
			if got := testutil.ToFloat64(h.svc.m.authFailures.WithLabelValues(tc.reason)); got != before+1 {
				t.Fatalf("auth failures{%s} = %v, want %v", tc.reason, got, before+1)
			}
		})
	}
	// The matching tenant and device are accepted when given explicitly.
	tb := id.tenant.Bytes()
	c := dialTCP(t, h.addrs.TCP)
	c.write(contract.OpAuth, &qimv1.AuthRequest{Token: id.token, TenantId: tb[:], DeviceId: "d1"})
	c.expect(contract.OpAuthOK, nil)
}

func TestAuthTimeoutCloses(t *testing.T) {
	h := startGateway(t, harnessOpts{mutate: func(c *Config) { c.AuthTimeout = 200 * time.Millisecond }})
	c := dialTCP(t, h.addrs.TCP)
	c.expectClosed(3 * time.Second)
	eventually(t, 2*time.Second, "timeout counted", func() bool {
		return testutil.ToFloat64(h.svc.m.authFailures.WithLabelValues("timeout")) >= 1
	})
}

func TestAuthFailsUnavailableWhenMailboxDown(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	h.mailbox.failOnline.Store(true)
	c := dialTCP(t, h.addrs.TCP)
	reqID := c.write(contract.OpAuth, &qimv1.AuthRequest{Token: newIdentity(t, "d").token})
	c.expectError(contract.ErrCodeUnavailable, reqID)
	c.expectClosed(3 * time.Second)
}

func TestDuplicateLoginKicksOldConnection(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	id := newIdentity(t, "phone")
	old := h.login(id)
	otherDevice := id
	otherDevice.device = "laptop"
	otherDevice.token = issue(t, otherDevice, time.Hour)
	laptop := h.login(otherDevice)

	fresh := h.login(id)
	var k qimv1.Kicked
	old.expect(contract.OpKicked, &k)
	if contract.KickReason(k.GetReason()) != contract.KickReplaced {
		t.Fatalf("KICKED reason %d, want REPLACED", k.GetReason())
	}
	old.expectClosed(3 * time.Second)
	fresh.ping()
	laptop.ping() // another device of the same user is not evicted
	if got := testutil.ToFloat64(h.svc.m.kicks.WithLabelValues("replaced")); got != 1 {
		t.Fatalf("kicks{replaced} = %v, want 1", got)
	}
	// Push now reaches the new connection (and the laptop), never the kicked one.
	eventually(t, 2*time.Second, "old session unregistered", func() bool {
		return len(h.svc.registry.appendConns(nil, userKey{id.tenant, id.user})) == 2
	})
}

func TestDrainKicksConnections(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	c := h.login(newIdentity(t, "d"))
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	var k qimv1.Kicked
	c.expect(contract.OpKicked, &k)
	if contract.KickReason(k.GetReason()) != contract.KickServerDrain || k.GetRetryAfterMs() == 0 {
		t.Fatalf("KICKED = %v, want SERVER_DRAIN with a retry hint", &k)
	}
	c.expectClosed(3 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}

// TestKickBeforeAuthStartsCloses: a drain reaches a connection between admitConn and the first
// line of authenticate (CI saw it: KICKED written, then the socket held open for AuthTimeout).
// The kick's expired read deadline must not be undone by the AUTH wait's own deadline.
func TestKickBeforeAuthStartsCloses(t *testing.T) {
	s := &Service{cfg: Config{AuthTimeout: time.Hour, WriteTimeout: time.Hour}}
	server, client := net.Pipe()
	defer client.Close()
	c := newConn(s, server, "tcp", nil)
	c.interrupt()
	done := make(chan bool, 1)
	go func() { done <- c.authenticate() }()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("an interrupted connection authenticated")
		}
	case <-time.After(caseWait):
		t.Fatalf("authenticate still waits for AUTH %v after the interrupt; it would wait AuthTimeout", caseWait)
	}
}

// TestStaleLoginLosesToNewerEpoch: when a session with a higher session_epoch already holds the
// device (two logins raced and the newer one registered first), the older login is kicked
// itself instead of evicting the newer one.
func TestStaleLoginLosesToNewerEpoch(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	id := newIdentity(t, "phone")
	newer := &session{key: userKey{id.tenant, id.user}, device: "phone", epoch: 1 << 62, conn: &conn{}}
	if _, err := h.svc.registry.register(newer); err != nil {
		t.Fatal(err)
	}
	defer h.svc.registry.unregister(newer)
	c := dialTCP(t, h.addrs.TCP)
	c.write(contract.OpAuth, &qimv1.AuthRequest{Token: id.token})
	var k qimv1.Kicked
	c.expect(contract.OpKicked, &k)
	if contract.KickReason(k.GetReason()) != contract.KickReplaced {
		t.Fatalf("KICKED reason %d, want REPLACED", k.GetReason())
	}
	c.expectClosed(3 * time.Second)
	if got := h.svc.registry.appendConns(nil, newer.key); len(got) != 1 || got[0] != newer.conn {
		t.Fatal("the stale login displaced the newer session")
	}
}
