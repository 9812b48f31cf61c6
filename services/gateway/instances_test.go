package gateway

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// serveWriter starts a fake writer and returns its address and its server, so a test can kill
// the instance.
func serveWriter(t *testing.T, f *fakeWriter) (string, *grpc.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	internalv1.RegisterWriterServer(gs, f)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String(), gs
}

// peerRankedFirst finds a peer whose direct conversation with id ranks addrs[want] first.
func peerRankedFirst(t *testing.T, id identity, addrs []string, want int) contract.UserID {
	t.Helper()
	for p := contract.UserID(2); p < 10_000; p++ {
		if best(addrs, id.tenant, contract.DirectConversationID(id.tenant, id.user, p), func(int) bool { return true }) == want {
			return p
		}
	}
	t.Fatal("no peer ranks the writer first")
	return 0
}

// A conversation's SENDs go to its rendezvous writer; when that instance dies with a SEND in
// flight, the SEND is answered UNAVAILABLE (outcome unknown) and the client's retry with the
// same client_message_id is carried by the other instance, at once, without waiting for the dead
// one to come back.
func TestWriterLostMidSendFallsBackToTheNextInstance(t *testing.T) {
	wa, wb := newFakeWriter(true), newFakeWriter(false)
	addrA, srvA := serveWriter(t, wa)
	addrB, _ := serveWriter(t, wb)
	addrs := []string{addrA, addrB}
	h := startGateway(t, harnessOpts{mutate: func(c *Config) { c.WriterAddrs = addrs }})
	id := newIdentity(t, "phone")
	c := h.login(id)

	peerA := peerRankedFirst(t, id, addrs, 0)
	first := cmid(t)
	reqID := c.nextID()
	c.writeBytes(contract.OpSend, reqID, sendPayload(t, peerA, first))
	nextReceived(t, wa, 5*time.Second) // held: the manual writer never answers
	select {
	case <-wb.received:
		t.Fatal("the SEND went to the writer its conversation does not rank first")
	default:
	}

	srvA.Stop() // the instance dies with the SEND in flight
	c.expectError(contract.ErrCodeUnavailable, reqID)
	if got := testutil.ToFloat64(h.svc.m.writerLost); got != 1 {
		t.Fatalf("qim_gateway_writer_instance_lost_total = %v, want 1", got)
	}

	retry := c.nextID()
	c.writeBytes(contract.OpSend, retry, sendPayload(t, peerA, first))
	in := nextReceived(t, wb, 5*time.Second)
	if in.GetSenderUserId() != uint64(id.user) {
		t.Fatalf("retry reached the other writer with sender %d", in.GetSenderUserId())
	}
	var ack qimv1.SendAck
	if m := c.expect(contract.OpSendAck, &ack); m.RequestID != retry {
		t.Fatalf("SEND_ACK for request %d, want %d", m.RequestID, retry)
	}
}

// Conversations spread over the writers (one stream per connection per instance used).
func TestSendsSpreadOverWritersByConversation(t *testing.T) {
	wa, wb := newFakeWriter(false), newFakeWriter(false)
	addrA, _ := serveWriter(t, wa)
	addrB, _ := serveWriter(t, wb)
	addrs := []string{addrA, addrB}
	h := startGateway(t, harnessOpts{mutate: func(c *Config) { c.WriterAddrs = addrs }})
	id := newIdentity(t, "phone")
	c := h.login(id)
	for i, f := range []*fakeWriter{wa, wb} {
		c.writeBytes(contract.OpSend, c.nextID(), sendPayload(t, peerRankedFirst(t, id, addrs, i), cmid(t)))
		nextReceived(t, f, 5*time.Second)
		c.expect(contract.OpSendAck, &qimv1.SendAck{})
	}
	if wa.streams.Load() != 1 || wb.streams.Load() != 1 {
		t.Fatalf("streams opened: %d and %d, want one per instance", wa.streams.Load(), wb.streams.Load())
	}
}

// A user's HasOffline (at AUTH), pulls and session requests go to the instance serving the
// user's shard, entry i of the lists serving InstanceShards(i, n).
func TestUsersRoutedToTheirShardsInstances(t *testing.T) {
	mbs := []*fakeMailbox{{}, {}}
	var mAddrs, sAddrs []string
	lists := make([]atomic.Int32, 2)
	for i := range mbs {
		mAddrs = append(mAddrs, serveGRPC(t, func(gs *grpc.Server) { internalv1.RegisterMailboxServer(gs, mbs[i]) }))
		ss := &fakeSession{list: func(*internalv1.AuthenticatedPullSessionList) *internalv1.PullSessionListOutcome {
			lists[i].Add(1)
			return &internalv1.PullSessionListOutcome{Batch: &qimv1.SessionListBatch{}}
		}}
		sAddrs = append(sAddrs, serveGRPC(t, func(gs *grpc.Server) { internalv1.RegisterSessionServer(gs, ss) }))
	}
	const shards = 64
	h := startGateway(t, harnessOpts{mutate: func(c *Config) {
		c.MailboxAddrs, c.SessionAddrs, c.ShardCount = mAddrs, sAddrs, shards
	}})
	n := contract.ShardCount(shards)
	seen := map[int]bool{}
	for len(seen) < 2 {
		id := newIdentity(t, "phone")
		want := n.ShardInstance(n.UserShard(id.tenant, id.user), 2)
		seen[want] = true
		c := h.login(id)
		if q := mbs[want].lastQuery(); q == nil || q.GetUserId() != uint64(id.user) {
			t.Fatalf("HasOffline of a user on shard instance %d did not reach MailboxNode %d", want, want)
		}
		if q := mbs[1-want].lastQuery(); q != nil && q.GetUserId() == uint64(id.user) {
			t.Fatalf("HasOffline reached MailboxNode %d, which does not serve the user's shard", 1-want)
		}
		c.write(contract.OpPullMailbox, &qimv1.PullMailbox{})
		c.expect(contract.OpMailboxBatch, &qimv1.MailboxBatch{})
		before := lists[want].Load()
		c.write(contract.OpPullSessionList, &qimv1.PullSessionList{})
		c.expect(contract.OpSessionListBatch, &qimv1.SessionListBatch{})
		if lists[want].Load() != before+1 {
			t.Fatalf("PULL_SESSION_LIST did not reach SessionProjection %d", want)
		}
	}
	if mbs[0].pulls.Load() == 0 || mbs[1].pulls.Load() == 0 {
		t.Fatalf("pulls per node: %d, %d; each must have served its users", mbs[0].pulls.Load(), mbs[1].pulls.Load())
	}
}
