package mailbox

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/presence"
)

// producePresence writes entries to qim.presence (device entries to their user's partition,
// boot announcements to shard's) and waits for their acks.
func (e *env) producePresence(shard uint32, entries ...presence.Entry) {
	e.t.Helper()
	p, err := commitlog.NewPresenceProducer(commitlog.PresenceConfig{Brokers: e.ep.kafka})
	if err != nil {
		e.t.Fatal(err)
	}
	defer p.Close()
	errc := make(chan error, len(entries))
	for _, en := range entries {
		part := int32(shard)
		if en.User != 0 {
			part = presence.Partition(e.shards, en)
		}
		v, err := presence.Encode(en, time.Now())
		if err != nil {
			e.t.Fatal(err)
		}
		p.Produce(e.ctx, commitlog.Record{Partition: part, Key: presence.Key(en), Value: v}, func(err error) { errc <- err })
	}
	for range entries {
		if err := <-errc; err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) online(u contract.UserID, gw string, boot, epoch uint64) presence.Entry {
	return presence.Entry{Device: presence.Device{Tenant: e.tenant, User: u, DeviceID: "phone"}, Gateway: gw, Boot: boot,
		Epoch: epoch, Online: true}
}

// Without QIM_GATEWAY_PUSH_ADDR the node pushes each recipient's event to the gateway that
// qim.presence says holds the user, and to no other: the entries written before the node started
// are loaded before it serves, and a gateway's newer boot ends its older sessions.
func TestPushFollowsPresence(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	gA, addrA := startFakeGateway(t)
	gB, addrB := startFakeGateway(t)
	sender, peer := e.user(s), e.user(s)
	e.producePresence(s, presence.Entry{Gateway: addrA, Boot: 1}, presence.Entry{Gateway: addrB, Boot: 1},
		e.online(sender, addrA, 1, 1), e.online(peer, addrB, 1, 1))
	n := e.start(e.config(s))

	_, ds := e.message(sender, peer, []byte("one"))
	e.produce(ds...)
	waitTargets(t, gA, 1)
	waitTargets(t, gB, 1)
	if u := users(gA); !slices.Equal(u, []uint64{uint64(sender)}) {
		t.Fatalf("gateway A got targets of users %v, want only the sender %d", u, sender)
	}
	if u := users(gB); !slices.Equal(u, []uint64{uint64(peer)}) {
		t.Fatalf("gateway B got targets of users %v, want only the peer %d", u, peer)
	}

	applied := counterValue(t, n.svc, "qim_mailbox_presence_entries_applied_total", "")
	e.producePresence(s, presence.Entry{Gateway: addrB, Boot: 2}) // B restarted: the peer's session is gone
	eventually(t, 20*time.Second, "boot applied", func() bool {
		return counterValue(t, n.svc, "qim_mailbox_presence_entries_applied_total", "") > applied
	})
	offline := counterValue(t, n.svc, "qim_mailbox_push_dropped_total", "offline")
	_, ds = e.message(sender, peer, []byte("two"))
	e.produce(ds...)
	waitTargets(t, gA, 2)
	eventually(t, 20*time.Second, "the peer's target counted offline", func() bool {
		return counterValue(t, n.svc, "qim_mailbox_push_dropped_total", "offline") == offline+1
	})
	if got := len(gB.received()); got != 1 {
		t.Fatalf("gateway B got %d targets after its restart ended the session, want still 1", got)
	}
}

func waitTargets(t *testing.T, g *fakeGateway, n int) {
	t.Helper()
	eventually(t, 20*time.Second, "push targets", func() bool { return len(g.received()) >= n })
}

func users(g *fakeGateway) []uint64 {
	var out []uint64
	for _, tg := range g.received() {
		if !slices.Contains(out, tg.GetUserId()) {
			out = append(out, tg.GetUserId())
		}
	}
	return out
}

// eventually polls cond until it holds or fails the test after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A follower that fails while pushers run must surface its error (the node then stops), not
// wait forever for pushers that only end with the node.
func TestPushDirectoryReturnsFollowerError(t *testing.T) {
	d := newPushDirectory(func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}, 4, newMetrics(newTestRegistry()), discardLog())
	started := make(chan struct{})
	boom := errors.New("qim.presence failed")
	follower := followerFunc(func(ctx context.Context) error {
		d.apply([]presence.Entry{{Device: presence.Device{User: 1, DeviceID: "d"}, Gateway: "127.0.0.1:1", Boot: 1, Epoch: 1, Online: true}})
		close(started)
		return boom
	})
	done := make(chan error, 1)
	go func() { done <- d.run(context.Background(), follower) }()
	<-started
	if _, g := d.stats(); g != 1 {
		t.Fatalf("%d pushers, want the one the entry named", g)
	}
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("run = %v, want the follower's error", err)
		}
	case <-time.After(30 * time.Second): // a deadlock, not a slow machine
		t.Fatal("run did not return after its follower failed")
	}
}

type followerFunc func(context.Context) error

func (f followerFunc) Run(ctx context.Context) error { return f(ctx) }
