package msgstore

import (
	"errors"
	"testing"
	"time"
)

// One (tenant, sender, client_message_id) names one message forever (within the window): reusing
// the cmid in another conversation — whose commit hash lives under another bucket tag — is a
// conflict and consumes no sequence there. After the commit's window the owner key expires with
// the commit hash, so the cmid is free again.
func TestClientMessageIDOwnedAcrossConversations(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 20)
	first := reserveOne(t, ctx, s, in)
	other := newFixture(t)
	other.tenant, other.sender = f.tenant, f.sender
	reuse := other.intent(t, 20)
	reuse.Key.ClientMessageID = in.Key.ClientMessageID
	reuse.Identity = in.Identity
	if _, errs := s.ReserveAndRecord(ctx, []Intent{reuse}); !errors.Is(errs[0], ErrIdentityConflict) {
		t.Fatalf("cmid reused in another conversation: err = %v, want conflict", errs[0])
	}
	if n := counter(t, rdb, other); n != 0 {
		t.Fatalf("the conflicting intent consumed a sequence (%d)", n)
	}
	old := time.Now().Add(-3 * time.Hour).UnixMilli()
	if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: old}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if rdb.Exists(ctx, ownerKey(in.Key)).Val() != 0 {
		t.Fatal("owner key outlived the idempotency window of its commit")
	}
	if c := reserveOne(t, ctx, s, reuse); !c.Fresh || c.Seq != 1 || c.MessageID == first.MessageID {
		t.Fatalf("after the window the cmid should be free: %+v", c)
	}
}
