package mailbox

import (
	"bytes"
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// fakeGateway is a Push server that records what it receives.
type fakeGateway struct {
	internalv1.UnimplementedPushServer
	mu      sync.Mutex
	targets []*internalv1.PushTarget
}

func (g *fakeGateway) PushBatch(_ context.Context, in *internalv1.PushBatchRequest) (*internalv1.PushBatchResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.targets = append(g.targets, in.GetTargets()...)
	return &internalv1.PushBatchResult{Delivered: uint32(len(in.GetTargets()))}, nil
}

func (g *fakeGateway) received() []*internalv1.PushTarget {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*internalv1.PushTarget(nil), g.targets...)
}

func startFakeGateway(t *testing.T) (*fakeGateway, string) {
	t.Helper()
	g := &fakeGateway{}
	addr, stop := servePushAt(t, g, "127.0.0.1:0")
	t.Cleanup(stop)
	return g, addr
}

// After the record is durable, each recipient's event is pushed to the gateway with its
// mailbox_seq; the sender's copy carries the anchor; the push does not touch any device cursor.
func TestPushReachesGateway(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	gw, addr := startFakeGateway(t)
	cfg := e.config(s)
	cfg.GatewayPushAddr = addr
	n := e.start(cfg)
	sender, peer := e.user(s), e.user(s)
	cmid, ds := e.message(sender, peer, []byte("ping"))
	off := e.produce(ds...)[0]
	deadline := time.Now().Add(20 * time.Second)
	for len(gw.received()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("gateway got %d targets, want 2", len(gw.received()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb := e.tenant.Bytes()
	for _, tg := range gw.received() {
		evs := tg.GetEvents()
		if !bytes.Equal(tg.GetTenantId(), tb[:]) || len(evs) != 1 || evs[0].GetMailboxSeq() != uint64(seqAt(t, off)) {
			t.Fatalf("push target %v", tg)
		}
		anchored := bytes.Equal(evs[0].GetClientMessageId(), cmid)
		if (tg.GetUserId() == uint64(sender)) != anchored || (!anchored && len(evs[0].GetClientMessageId()) != 0) {
			t.Fatalf("anchor on the wrong copy: user %d, cmid %x", tg.GetUserId(), evs[0].GetClientMessageId())
		}
	}
	for _, u := range []uint64{uint64(sender), uint64(peer)} {
		for _, dev := range []string{"d", "phone"} {
			if _, ok, _ := e.store.DeviceCursor(e.ctx, e.tenant, contract.UserID(u), dev); ok {
				t.Fatal("a push stored a device cursor")
			}
		}
	}
	if v := counterValue(t, n.svc, "qim_mailbox_push_delivered_total", ""); v != 2 {
		t.Fatalf("delivered pushes counted %v", v)
	}
}

// A full push queue drops (counted) instead of blocking the caller.
func TestPushQueueFullDropsWithoutBlocking(t *testing.T) {
	m := newMetrics(newTestRegistry())
	p := newPusher(nil, 2, m, discardLog())
	done := make(chan struct{})
	go func() {
		p.enqueue(make([]*internalv1.PushTarget, 5))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("enqueue blocked on a full queue")
	}
	if got := testCounter(t, m.pushDropped.WithLabelValues("queue_full")); got != 3 {
		t.Fatalf("dropped %v, want 3", got)
	}
}

// servePushAt serves g's Push service on addr (port 0: any free one) until stop is called; a
// port just released is retried for up to 5 s.
func servePushAt(t *testing.T, g *fakeGateway, addr string) (bound string, stop func()) {
	t.Helper()
	var lis net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if lis, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	gs := grpc.NewServer()
	internalv1.RegisterPushServer(gs, g)
	go func() { _ = gs.Serve(lis) }()
	return lis.Addr().String(), gs.Stop
}

// A gateway that restarts after being away long enough for gRPC's reconnect backoff to grow gets
// pushes again as soon as it listens: a push made right after the restart waits for the
// reconnect instead of being dropped (which would leave devices waiting for their heartbeat's
// fallback pull).
func TestPushReachesRestartedGateway(t *testing.T) {
	m := newMetrics(newTestRegistry())
	g := &fakeGateway{}
	addr, stop := servePushAt(t, g, "127.0.0.1:0")
	conn, err := grpc.NewClient(addr, append(pushDialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := newPusher(internalv1.NewPushClient(conn), 64, m, discardLog())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.run(ctx) }()
	// waitUser waits until the gateway got user's target. The queue is FIFO with one sender, so
	// once it arrived nothing enqueued before it is still on its way (counting targets instead
	// raced with a user-2 push that was in flight across the restart).
	waitUser := func(user uint64, within time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(within); !slices.ContainsFunc(g.received(), func(tg *internalv1.PushTarget) bool {
			return tg.GetUserId() == user
		}); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("gateway got no target of user %d within %v (%d targets)", user, within, len(g.received()))
			}
		}
	}
	p.enqueue([]*internalv1.PushTarget{{UserId: 1}})
	waitUser(1, 5*time.Second)

	stop() // the gateway dies; pushes meanwhile are dropped (best effort)
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		p.enqueue([]*internalv1.PushTarget{{UserId: 2}})
	}
	dropped := testCounter(t, m.pushDropped.WithLabelValues("rpc_error"))
	if dropped == 0 {
		t.Fatal("no push was dropped while the gateway was down")
	}
	_, restarted := servePushAt(t, g, addr)
	defer restarted()
	p.enqueue([]*internalv1.PushTarget{{UserId: 3}})
	waitUser(3, pushTimeout+time.Second)
	if got := g.received(); got[len(got)-1].GetUserId() != 3 {
		t.Fatalf("last target pushed is user %d, want 3", got[len(got)-1].GetUserId())
	}
}

// PushSession hands a MARK_READ's SESSION_DELTA to the push path unchanged (the gateway filters
// the device that marked), and refuses a target that is not one session delta.
func TestPushSessionReachesGateway(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	gw, addr := startFakeGateway(t)
	cfg := e.config(s)
	cfg.GatewayPushAddr = addr
	n := e.start(cfg)
	tb := e.tenant.Bytes()
	u := e.user(s)
	delta := &qimv1.SessionDelta{Sessions: []*qimv1.SessionEntry{{ConversationId: make([]byte, 16), ReadConversationSeq: 7}}}
	if _, err := n.client.PushSession(e.ctx, &internalv1.PushTarget{TenantId: tb[:], UserId: uint64(u), SessionDelta: delta,
		ExceptDevice: "phone"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(gw.received()) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the gateway got no target")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := gw.received()[0]
	if got.GetUserId() != uint64(u) || got.GetExceptDevice() != "phone" || !proto.Equal(got.GetSessionDelta(), delta) {
		t.Fatalf("target %v", got)
	}
	for name, bad := range map[string]*internalv1.PushTarget{
		"no delta":    {TenantId: tb[:], UserId: uint64(u)},
		"with events": {TenantId: tb[:], UserId: uint64(u), SessionDelta: delta, Events: []*qimv1.MailboxEvent{{}}},
		"no user":     {TenantId: tb[:], SessionDelta: delta},
		"both kinds":  {TenantId: tb[:], UserId: uint64(u), SessionDelta: delta, Typing: &qimv1.TypingEvent{UserId: 1}},
	} {
		if _, err := n.client.PushSession(e.ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}
