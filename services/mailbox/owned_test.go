package mailbox

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// A pull or offline check of a user whose shard the node does not own is refused UNAVAILABLE
// (retryable) with a message naming the shard, counted, and answered from nothing: no cursor is
// recorded. In a batch only that pull is refused; the others are served as usual.
func TestUnownedShardRefused(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	other := (s + 1) % uint32(e.shards) // never written: the refusal must not reach the store
	sender, peer, stranger := e.user(s), e.user(s), e.user(other)
	_, ds := e.message(sender, peer, []byte("mine"))
	e.waitWatermark(s, e.produce(ds...)[0])
	wantShard := fmt.Sprintf("shard %d", other)
	refused := func(what string, code contract.ErrorCode, msg string) {
		t.Helper()
		if code != contract.ErrCodeUnavailable || !strings.Contains(msg, wantShard) || !strings.Contains(msg, "wrong MailboxNode") {
			t.Fatalf("%s of a user on unowned shard %d: %v %q, want UNAVAILABLE naming the shard", what, other, code, msg)
		}
	}

	o := e.pullOutcome(n, stranger, "d", &qimv1.PullMailbox{})
	refused("PullMailbox", contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage())
	if o.GetBatch() != nil {
		t.Fatalf("a refused pull carried a batch: %v", o.GetBatch())
	}

	tb := e.tenant.Bytes()
	item := func(u contract.UserID, dev string) *internalv1.AuthenticatedPullMailbox {
		raw, err := proto.Marshal(&qimv1.PullMailbox{})
		if err != nil {
			t.Fatal(err)
		}
		return &internalv1.AuthenticatedPullMailbox{TenantId: tb[:], UserId: uint64(u), DeviceId: dev, PullMailbox: raw}
	}
	out, err := n.client.PullMailboxBatch(e.ctx, &internalv1.PullMailboxBatchRequest{Pulls: []*internalv1.AuthenticatedPullMailbox{
		item(peer, "a"), item(stranger, "b"), item(sender, "a"),
	}})
	if err != nil || len(out.GetOutcomes()) != 3 {
		t.Fatalf("PullMailboxBatch: %v, %v", out, err)
	}
	batch := out.GetOutcomes()
	refused("batched PullMailbox", contract.ErrorCode(batch[1].GetErrorCode()), batch[1].GetErrorMessage())
	for _, i := range []int{0, 2} {
		if batch[i].GetErrorCode() != 0 || len(batch[i].GetBatch().GetEntries()) != 1 {
			t.Fatalf("owned pull %d of the batch: %v", i, batch[i])
		}
	}

	_, err = n.client.HasOffline(e.ctx, &internalv1.OfflineQuery{TenantId: tb[:], UserId: uint64(stranger), DeviceId: "d"})
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable {
		t.Fatalf("HasOffline of a user on an unowned shard: %v, want gRPC Unavailable", err)
	} else {
		refused("HasOffline", contract.ErrCodeUnavailable, st.Message())
	}
	if !e.hasOffline(n, peer, 0) {
		t.Fatal("HasOffline of an owned user lost its entry")
	}

	if v := counterValue(t, n.svc, "qim_mailbox_unowned_requests_total", ""); v != 3 {
		t.Fatalf("qim_mailbox_unowned_requests_total = %v, want 3", v)
	}
	// A misrouted pull is the routing's fault, not a failed pull: it must not page as errors.
	if u, e := counterValue(t, n.svc, "qim_mailbox_pulls_total", "unowned"), counterValue(t, n.svc, "qim_mailbox_pulls_total", "error"); u != 2 || e != 0 {
		t.Fatalf("qim_mailbox_pulls_total: unowned %v, error %v; want 2 and 0", u, e)
	}
	for _, dev := range []string{"d", "b"} {
		if _, ok, err := e.store.DeviceCursor(e.ctx, e.tenant, stranger, dev); err != nil || ok {
			t.Fatalf("a refused pull recorded device %s's cursor (%v, %v)", dev, ok, err)
		}
	}
}
