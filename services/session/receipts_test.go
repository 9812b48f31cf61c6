package session

import (
	"testing"
	"time"

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

func (r *running) setShare(u contract.UserID, share bool) {
	r.t.Helper()
	raw, _ := proto.Marshal(&qimv1.SetReadReceipts{Share: share})
	tb := r.e.tenant.Bytes()
	out, err := r.cl.SetReadReceipts(r.e.ctx, &internalv1.AuthenticatedSetReadReceipts{TenantId: tb[:], UserId: uint64(u), SetReadReceipts: raw})
	if err != nil || out.GetErrorCode() != 0 || out.GetAnswer().GetShare() != share {
		r.t.Fatalf("SetReadReceipts(%v): %v %v", share, out, err)
	}
}

// Withholding read receipts is symmetric (the seed): a user who turned them off shows no read to
// anyone — 0 and withheld in a group's receipts, out of the count and the audience, 0 as a peer's
// watermark, no receipt after its MARK_READ — and sees nobody's: FORBIDDEN for group receipts, 0
// as its peers' watermark. Turning them on again restores both directions.
func TestWithheldReceiptsAreSymmetric(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	owner, a, b := e.user(), e.user(), e.user()
	g := e.newGroup(owner, a, b)
	seq := g.send(nil, msg{from: owner})[0]
	for _, u := range []contract.UserID{a, b} {
		if out := r.markRead(u, g.conv, seq); out.GetErrorCode() != 0 {
			t.Fatal(out)
		}
	}
	r.setShare(a, false)
	bt := r.receipts(owner, g.conv, seq).GetBatch()
	if bt.GetReadCount() != 1 || bt.GetAudienceCount() != 1 {
		t.Errorf("with a withholding: read by %d of %d, want 1 of 1 (a counted nowhere)", bt.GetReadCount(), bt.GetAudienceCount())
	}
	for _, m := range bt.GetReads() {
		if w := contract.UserID(m.GetUserId()) == a; m.GetWithheld() != w || (w && m.GetReadConversationSeq() != 0) {
			t.Errorf("member %d: %v, want withheld only for a, with 0", m.GetUserId(), m)
		}
	}
	if o := r.receipts(a, g.conv, seq); contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeForbidden {
		t.Errorf("receipts pulled by a withholding member: %v, want FORBIDDEN", o)
	}

	dseqs := e.send(msg{from: owner, to: a}, msg{from: a, to: owner})
	conv := e.conv(owner, a)
	r.waitListed(owner, conv)
	r.waitListed(a, conv)
	if out := r.markRead(a, conv, dseqs[1]); out.GetShareReceipt() || out.GetEntry().GetPeerReadConversationSeq() != 0 {
		t.Errorf("a's MARK_READ while withholding: share_receipt %v, peer read %d; want neither", out.GetShareReceipt(),
			out.GetEntry().GetPeerReadConversationSeq())
	}
	if got := findEntry(r.list(owner), conv).GetPeerReadConversationSeq(); got != 0 {
		t.Errorf("owner's row shows a's withheld watermark %d", got)
	}
	eventually(t, 20*time.Second, "the owner's own message read (sending is reading)", func() bool {
		return findEntry(r.list(owner), conv).GetReadConversationSeq() >= dseqs[0]
	})
	if got := findEntry(r.list(a), conv).GetPeerReadConversationSeq(); got != 0 {
		t.Errorf("a, withholding, sees the owner's watermark %d", got)
	}
	r.setShare(a, true)
	if got := findEntry(r.list(owner), conv).GetPeerReadConversationSeq(); got != dseqs[1] {
		t.Errorf("after a shares again: owner's row peer read %d, want %d", got, dseqs[1])
	}
	if out := r.markRead(owner, conv, dseqs[1]); !out.GetShareReceipt() {
		t.Errorf("both sharing: the owner's MARK_READ has share_receipt false")
	}
}
