package session

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// The badge is the sum of the rows' exact unread: other users' messages after the read
// watermark, never the user's own, never CONTROL; a MARK_READ lowers it.
func TestBadgeSumsExactUnread(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	alice, bob, carol, dave := e.user(), e.user(), e.user(), e.user()
	seqs := e.send(msg{from: bob, to: alice}, msg{from: bob, to: alice}, msg{from: carol, to: alice},
		msg{from: carol, to: alice}, msg{from: carol, to: alice}, msg{from: alice, to: dave},
		msg{from: bob, to: alice, typ: contract.MessageControl})
	badge := func() *internalv1.BadgeAnswer {
		t.Helper()
		tb := e.tenant.Bytes()
		out, err := r.cl.Badge(e.ctx, &internalv1.BadgeQuery{TenantId: tb[:], UserId: uint64(alice)})
		if err != nil || out.GetErrorCode() != 0 {
			t.Fatalf("Badge: %v %v", out, err)
		}
		return out
	}
	eventually(t, 20*time.Second, "three conversations listed", func() bool { return len(r.list(alice)) == 3 })
	if b := badge(); b.GetUnread() != 5 || b.GetSaturated() {
		t.Fatalf("badge %v, want 5 exact", b)
	}
	if out := r.markRead(alice, e.conv(alice, bob), seqs[1]); out.GetErrorCode() != 0 {
		t.Fatal(out)
	}
	if b := badge(); b.GetUnread() != 3 {
		t.Fatalf("badge after reading bob's %v, want 3", b)
	}
}
