package room

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// running is one RoomWriter under Run, reached over real gRPC on loopback (plaintext).
type running struct {
	t   *testing.T
	ctx context.Context
	svc *Service
	cl  internalv1.RoomWriterClient
}

func startService(t *testing.T) *running {
	t.Helper()
	cfg := testConfig(func(c *Config) { c.RedisAddr = itest.Endpoints(t).RedisCore })
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- svc.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-errc; err != nil {
			t.Errorf("Run returned %v after the stop", err)
		}
		cancel()
	})
	for svc.GRPCAddr() == "" { // Run publishes the address once the listener is open
		select {
		case err := <-errc:
			t.Fatalf("Run ended before serving: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cc, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return &running{t: t, ctx: ctx, svc: svc, cl: internalv1.NewRoomWriterClient(cc)}
}

func (r *running) publish(sender uint64, room []byte, cmid uint64, body string) *qimv1.SendAck {
	r.t.Helper()
	out, err := r.cl.Publish(r.ctx, publishOf(r.t, sender, room, cmid, body))
	if err != nil || out.GetErrorCode() != 0 {
		r.t.Fatalf("Publish: %v %s %s", err, contract.ErrorCode(out.GetErrorCode()), out.GetErrorMessage())
	}
	return out.GetAck()
}

// gatewayLink is the gateway's side of one Link, its downs flattened into items in order.
type gatewayLink struct {
	t       *testing.T
	stream  grpc.BidiStreamingClient[internalv1.RoomLinkUp, internalv1.RoomLinkDown]
	pending []*internalv1.RoomLinkItem
}

func (r *running) link(name string) *gatewayLink {
	r.t.Helper()
	st, err := r.cl.Link(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	g := &gatewayLink{t: r.t, stream: st}
	if name != "" { // "" opens the link without a hello, which must be tolerated
		g.up(&internalv1.RoomLinkUp{Op: &internalv1.RoomLinkUp_Hello{Hello: &internalv1.RoomLinkHello{Gateway: name}}})
	}
	return g
}

func (g *gatewayLink) up(m *internalv1.RoomLinkUp) {
	g.t.Helper()
	if err := g.stream.Send(m); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gatewayLink) join(c *internalv1.RoomJoinCall) {
	g.up(&internalv1.RoomLinkUp{Op: &internalv1.RoomLinkUp_Join{Join: c}})
}

func (g *gatewayLink) leave(c *internalv1.RoomLeaveCall) {
	g.up(&internalv1.RoomLinkUp{Op: &internalv1.RoomLinkUp_Leave{Leave: c}})
}

func (g *gatewayLink) next() *internalv1.RoomLinkItem {
	g.t.Helper()
	for len(g.pending) == 0 {
		d, err := g.stream.Recv()
		if err != nil {
			g.t.Fatalf("link Recv: %v", err)
		}
		g.pending = d.GetItems()
	}
	it := g.pending[0]
	g.pending = g.pending[1:]
	return it
}

func (g *gatewayLink) answer(call uint64) *internalv1.RoomJoinAnswer {
	g.t.Helper()
	a := g.next().GetJoined()
	if a.GetCallId() != call || a.GetErrorCode() != 0 {
		g.t.Fatalf("got %v, want the successful answer of call %d", a, call)
	}
	return a
}

// events reads broadcasts until it holds n events, all of room.
func (g *gatewayLink) events(room []byte, n int) []*qimv1.RoomEvent {
	g.t.Helper()
	var out []*qimv1.RoomEvent
	for len(out) < n {
		b := g.next().GetEvents()
		if b == nil || string(b.GetRoomId()) != string(roomConvBytes(g.t, room)) {
			g.t.Fatalf("got %v, want a broadcast of room %x", b, room)
		}
		out = append(out, b.GetEvents()...)
	}
	if len(out) != n {
		g.t.Fatalf("got %d events, want %d", len(out), n)
	}
	return out
}

func roomConvBytes(t *testing.T, room []byte) []byte {
	b := roomConv(t, room).Bytes()
	return b[:]
}

func TestLinkReplayThenLiveInOrder(t *testing.T) {
	r := startService(t)
	room := roomBytes(30)
	var acks []*qimv1.SendAck
	for i := range 3 {
		acks = append(acks, r.publish(5, room, uint64(i+1), "before"))
	}
	g := r.link("gw-1")
	g.join(joinCall(1, room, 7, ptr(acks[0].GetConversationSeq())))
	a := g.answer(1)
	if !slices.Equal(a.GetJoined().GetRoomId(), room) || a.GetJoined().GetRoomSeq() != acks[2].GetConversationSeq() ||
		a.GetJoined().GetReplayTruncated() || len(a.GetReplay()) != 3 {
		t.Fatalf("answer %v: want the room echoed, room_seq %d, the 3 events replayed, not truncated", a, acks[2].GetConversationSeq())
	}
	if got := seqs(a.GetReplay()); !slices.Equal(got, seqRange(acks[0].GetConversationSeq(), acks[2].GetConversationSeq())) {
		t.Fatalf("replayed %v", got)
	}
	for i := range 5 {
		r.publish(6, room, uint64(10+i), "after")
	}
	live := g.events(room, 5)
	if got, want := seqs(live), seqRange(a.GetJoined().GetRoomSeq()+1, a.GetJoined().GetRoomSeq()+5); !slices.Equal(got, want) {
		t.Fatalf("live events %v, want %v", got, want)
	}
	if live[0].GetSenderUserId() != 6 || string(live[0].GetBody()) != "after" || live[0].GetMessageType() != uint32(contract.MessageText) {
		t.Fatalf("event %v does not carry the publish", live[0])
	}
	// A room new to this process cannot prove a replay complete.
	g.join(joinCall(2, roomBytes(31), 7, ptr(uint64(1))))
	if a := g.answer(2); !a.GetJoined().GetReplayTruncated() || len(a.GetReplay()) != 0 {
		t.Fatalf("fresh room answered %v; want truncated and empty", a)
	}
	g.join(&internalv1.RoomJoinCall{CallId: 3, TenantId: tenantBytes(), RoomId: make([]byte, 16), UserId: 7})
	if a := g.next().GetJoined(); a.GetCallId() != 3 || contract.ErrorCode(a.GetErrorCode()) != contract.ErrCodeInvalidArgument {
		t.Fatalf("zero room id answered %v; want INVALID_ARGUMENT", a)
	}
}

// Two links on one room each carry every event once, however many connections each joined.
func TestTwoLinksEachGetEveryEventOnce(t *testing.T) {
	r := startService(t)
	room := roomBytes(40)
	g1, g2 := r.link("gw-1"), r.link("gw-2")
	g1.join(joinCall(1, room, 7, nil))
	g1.join(joinCall(2, room, 8, nil))
	g1.join(joinCall(3, room, 8, nil))
	g2.join(joinCall(1, room, 9, nil))
	g1.answer(1)
	g1.answer(2)
	g1.answer(3)
	g2.answer(1)
	for i := range 20 {
		r.publish(5, room, uint64(i+1), "x")
	}
	for _, g := range []*gatewayLink{g1, g2} {
		evs := g.events(room, 20)
		if got := seqs(evs); !slices.IsSorted(got) || got[19]-got[0] != 19 {
			t.Fatalf("events %v: want 20 consecutive room_seq, once each", got)
		}
	}
}

// A leave stops delivery: an event published after it does not arrive before the answer of a
// later join on the same link, which the link would have to carry after it.
func TestLeaveStopsDelivery(t *testing.T) {
	r := startService(t)
	room, marker := roomBytes(50), roomBytes(51)
	g := r.link("")
	g.join(joinCall(1, room, 7, nil))
	g.answer(1)
	first := r.publish(5, room, 1, "seen")
	if got := seqs(g.events(room, 1)); got[0] != first.GetConversationSeq() {
		t.Fatalf("got %v before the leave", got)
	}
	g.leave(leaveCall(room, 7))
	g.join(joinCall(2, marker, 7, nil)) // applied after the leave: one receiver, in order
	g.answer(2)
	r.publish(5, room, 2, "not seen")
	g.join(joinCall(3, marker, 8, nil))
	if it := g.next(); it.GetJoined().GetCallId() != 3 {
		t.Fatalf("after the leave the link carried %v; want nothing of the room before the next answer", it)
	}
}

// Ending a link (the gateway closes it) removes all its memberships before the handler returns.
func TestLinkEndRemovesMemberships(t *testing.T) {
	r := startService(t)
	g := r.link("gw-1")
	for i := range 3 {
		g.join(joinCall(uint64(i+1), roomBytes(uint64(60+i)), 7, nil))
		g.answer(uint64(i + 1))
	}
	if j := r.svc.tally.joined.Load(); j != 3 {
		t.Fatalf("%d joined connections, want 3", j)
	}
	if err := g.stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("link ended with %v, want a clean end", err)
	}
	if j, m := r.svc.tally.joined.Load(), r.svc.tally.members.Load(); j != 0 || m != 0 {
		t.Fatalf("after the link ended: %d joined connections, %d members; want none", j, m)
	}
}

// /healthz is ready once the listener is open, and the metrics carry the service's names.
func TestHealthAndMetrics(t *testing.T) {
	r := startService(t)
	r.publish(5, roomBytes(70), 1, "x")
	for path, want := range map[string]string{"/healthz": "", "/metrics": "qim_room_publishes_total"} {
		req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, "http://"+r.svc.MetricsAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d %v, want 200 containing %q", path, resp.StatusCode, err, want)
		}
	}
}
