package mailbox

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// PullMailboxBatch answers pull i with outcome i, exactly as PullMailbox would: a malformed pull
// gets its own INVALID_ARGUMENT while the others in the batch are served and store their cursors.
func TestPullMailboxBatch(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	sender, peer := e.user(s), e.user(s)
	var offs []int64
	for i := 0; i < 2; i++ {
		_, ds := e.message(sender, peer, nil)
		offs = append(offs, e.produce(ds...)...)
	}
	e.waitWatermark(s, offs[len(offs)-1])
	tb := e.tenant.Bytes()
	item := func(u contract.UserID, dev string, cursor uint64) *internalv1.AuthenticatedPullMailbox {
		raw, err := proto.Marshal(&qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		return &internalv1.AuthenticatedPullMailbox{TenantId: tb[:], UserId: uint64(u), DeviceId: dev, PullMailbox: raw}
	}
	req := &internalv1.PullMailboxBatchRequest{Pulls: []*internalv1.AuthenticatedPullMailbox{
		item(peer, "a", 0), item(peer, "b", 1<<63), item(sender, "a", 0), item(peer, "c", uint64(seqAt(t, offs[0]))),
	}}
	out, err := n.client.PullMailboxBatch(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.GetOutcomes()) != 4 {
		t.Fatalf("%d outcomes for 4 pulls", len(out.GetOutcomes()))
	}
	o := out.GetOutcomes()
	if contract.ErrorCode(o[1].GetErrorCode()) != contract.ErrCodeInvalidArgument || o[1].GetBatch() != nil {
		t.Errorf("malformed cursor: %v", o[1])
	}
	for _, i := range []int{0, 2, 3} {
		if o[i].GetErrorCode() != 0 || o[i].GetBatch() == nil {
			t.Fatalf("pull %d: %v", i, o[i])
		}
		// The same pull alone answers the same entries.
		alone := e.pullOutcome(n, contract.UserID(req.Pulls[i].UserId), "probe", &qimv1.PullMailbox{
			Cursor: &qimv1.MailboxCursor{MailboxSeq: cursorOf(t, req.Pulls[i])}})
		if !proto.Equal(alone.GetBatch(), o[i].GetBatch()) {
			t.Errorf("pull %d batched %v, alone %v", i, o[i].GetBatch(), alone.GetBatch())
		}
	}
	if len(o[0].GetBatch().GetEntries()) == 0 || len(o[3].GetBatch().GetEntries()) >= len(o[0].GetBatch().GetEntries()) {
		t.Errorf("peer from zero %d entries, from offset %d: %d", len(o[0].GetBatch().GetEntries()), offs[0],
			len(o[3].GetBatch().GetEntries()))
	}
	if c, _, _ := e.store.DeviceCursor(e.ctx, e.tenant, peer, "c"); c != seqAt(t, offs[0]) {
		t.Errorf("device c cursor %d, want the pulled cursor", c)
	}
	for _, bad := range []*internalv1.PullMailboxBatchRequest{{}, {Pulls: make([]*internalv1.AuthenticatedPullMailbox, maxPullBatch+1)}} {
		if _, err := n.client.PullMailboxBatch(e.ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("batch of %d pulls: %v, want InvalidArgument", len(bad.Pulls), err)
		}
	}
}

func cursorOf(t *testing.T, in *internalv1.AuthenticatedPullMailbox) uint64 {
	t.Helper()
	var p qimv1.PullMailbox
	if err := proto.Unmarshal(in.GetPullMailbox(), &p); err != nil {
		t.Fatal(err)
	}
	return p.GetCursor().GetMailboxSeq()
}
