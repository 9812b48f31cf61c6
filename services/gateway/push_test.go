package gateway

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func target(id identity, seqs ...uint64) *internalv1.PushTarget {
	tb := id.tenant.Bytes()
	t := &internalv1.PushTarget{TenantId: tb[:], UserId: uint64(id.user)}
	for _, s := range seqs {
		t.Events = append(t.Events, &qimv1.MailboxEvent{MailboxSeq: s, EventType: uint32(contract.EventMessage),
			MessageId: bytes.Repeat([]byte{byte(s)}, 16), Body: []byte("hi")})
	}
	return t
}

func TestPushBatchReachesLiveConnectionsAndDropsOffline(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	online := newIdentity(t, "phone")
	phone := h.login(online)
	second := online
	second.device = "laptop"
	second.token = issue(t, second, time.Hour)
	laptop := h.login(second)
	offline := newIdentity(t, "d")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := h.pushClient().PushBatch(ctx, &internalv1.PushBatchRequest{Targets: []*internalv1.PushTarget{
		target(online, 0x0001_0000_0000_0003, 0x0001_0000_0000_0004), target(offline, 9), {TenantId: []byte{1}, UserId: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetDelivered() != 1 || res.GetDropped() != 2 {
		t.Fatalf("PushBatch result = %v, want delivered 1, dropped 2", res)
	}
	want := &qimv1.PushEvents{Events: target(online, 0x0001_0000_0000_0003, 0x0001_0000_0000_0004).GetEvents()}
	for _, c := range []*client{phone, laptop} {
		var got qimv1.PushEvents
		if m := c.expect(contract.OpPushEvents, &got); m.RequestID != 0 {
			t.Fatalf("PUSH_EVENTS request id %d, want 0 (unsolicited)", m.RequestID)
		}
		if !proto.Equal(&got, want) {
			t.Fatalf("PUSH_EVENTS = %v, want %v", &got, want)
		}
	}
	// A push is not a pull: the gateway never asks the mailbox for anything on the client's
	// behalf, so no cursor can move because of it (the client pulls to advance).
	if n := h.mailbox.pulls.Load(); n != 0 {
		t.Fatalf("push caused %d PullMailbox calls", n)
	}
	for outcome, n := range map[string]float64{"queued": 1, "offline": 1, "invalid": 1} {
		if got := testutil.ToFloat64(h.svc.m.pushes.WithLabelValues(outcome)); got != n {
			t.Fatalf("push targets{%s} = %v, want %v", outcome, got, n)
		}
	}
}

func TestPushQueueFullDropsAndCounts(t *testing.T) {
	// No socket: a connection whose pump is not running, so its queue stays full deterministically.
	svc, err := New(validConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	id := identity{tenant: contract.TenantID{Lo: 3}, user: 4, device: "d"}
	c := &conn{s: svc, pushQ: make(chan []byte, 1)}
	if _, err := svc.registry.register(&session{key: userKey{id.tenant, id.user}, device: "d", epoch: 1, conn: c}); err != nil {
		t.Fatal(err)
	}
	if got := svc.pushTarget(target(id, 1), nil); got != "queued" {
		t.Fatalf("first push: %s", got)
	}
	if got := svc.pushTarget(target(id, 2), nil); got != "queue_full" {
		t.Fatalf("second push into a full queue: %s, want queue_full", got)
	}
	if testutil.ToFloat64(svc.m.pushDropped) != 1 || len(c.pushQ) != 1 {
		t.Fatal("the dropped push was not counted, or the queue grew past its bound")
	}
}
