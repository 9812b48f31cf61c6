package session

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func (r *running) receipts(u contract.UserID, conv contract.ConversationID, seq uint64) *internalv1.PullReadReceiptsOutcome {
	r.t.Helper()
	cb := conv.Bytes()
	raw, _ := proto.Marshal(&qimv1.PullReadReceipts{ConversationId: cb[:], ConversationSeq: seq})
	tb := r.e.tenant.Bytes()
	out, err := r.cl.PullReadReceipts(r.e.ctx, &internalv1.AuthenticatedPullReadReceipts{TenantId: tb[:], UserId: uint64(u),
		DeviceId: "d", PullReadReceipts: raw})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// Group receipts are the members' watermarks: "who read s" is {member | watermark >= s}, counted
// over the audience of s only — a member added after s reads past it without being counted, a
// removed member is not listed, and the asker is neither listed nor counted.
func TestGroupReadReceiptsCountTheAudience(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	owner, a, b, c, gone, late := e.user(), e.user(), e.user(), e.user(), e.user(), e.user()
	g := e.newGroup(owner, a, b, c, gone)                   // 1
	seqs := g.send(nil, msg{from: owner}, msg{from: owner}) // 2, 3
	g.change(contract.MembershipRemove, owner, gone)        // 4
	g.change(contract.MembershipAdd, owner, late)           // 5: late 4:
	for _, m := range []struct {
		u   contract.UserID
		seq uint64
	}{{a, seqs[1]}, {b, seqs[0]}, {late, 5}} {
		if out := r.markRead(m.u, g.conv, m.seq); out.GetErrorCode() != 0 {
			t.Fatal(out)
		}
	}
	out := r.receipts(owner, g.conv, seqs[1])
	if out.GetErrorCode() != 0 {
		t.Fatalf("PullReadReceipts: %v", out)
	}
	got := map[contract.UserID]uint64{}
	for _, m := range out.GetBatch().GetReads() {
		got[contract.UserID(m.GetUserId())] = m.GetReadConversationSeq()
	}
	want := map[contract.UserID]uint64{a: seqs[1], b: seqs[0], c: 0, late: 5}
	if len(got) != len(want) {
		t.Fatalf("reads %v, want %v (no asker, no removed member)", got, want)
	}
	for u, w := range want {
		if got[u] != w {
			t.Errorf("user %d read %d, want %d", u, got[u], w)
		}
	}
	if bt := out.GetBatch(); bt.GetAudienceCount() != 3 || bt.GetReadCount() != 1 {
		t.Errorf("seq %d: read by %d of %d, want 1 of 3 (a; late joined after it)", seqs[1], bt.GetReadCount(), bt.GetAudienceCount())
	}
	if bt := r.receipts(owner, g.conv, seqs[0]).GetBatch(); bt.GetAudienceCount() != 3 || bt.GetReadCount() != 2 {
		t.Errorf("seq %d: read by %d of %d, want 2 of 3", seqs[0], bt.GetReadCount(), bt.GetAudienceCount())
	}
	if bt := r.receipts(a, g.conv, 0).GetBatch(); len(bt.GetReads()) != 4 || bt.GetAudienceCount() != 0 {
		t.Errorf("watermarks only: %v, want 4 reads and no count", bt)
	}
	for name, o := range map[string]*internalv1.PullReadReceiptsOutcome{
		"a removed member": r.receipts(gone, g.conv, 2),
		"a stranger":       r.receipts(e.user(), g.conv, 2),
	} {
		if contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeNotMember {
			t.Errorf("%s: %v, want NOT_MEMBER", name, o)
		}
	}
	if o := r.receipts(a, e.conv(a, b), 1); contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeInvalidArgument {
		t.Errorf("a direct conversation: %v, want INVALID_ARGUMENT", o)
	}
}
