package msgstore

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The reserve scripts write the commit hash first and INCR the counter right after it, so a
// reserve that died in between leaves a RESERVED commit whose seq the counter does not cover yet
// (lua_fault_test.go shows its own retry converges). These tests build that state, let other
// sends of the conversation run before the retry, and check that no seq is ever recorded twice
// and no history record is overwritten.

// reserveDiedAfterHash reserves in (two-step, state R) and then undoes everything but the commit
// hash: the keyspace a reserve leaves when it dies right after its first write.
func reserveDiedAfterHash(t *testing.T, ctx context.Context, s *Store, rdb *redis.Client, in Intent) Commit {
	t.Helper()
	r, err := s.Reserve(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ck := newConvKeys(in.Key.Tenant, in.Key.Conversation)
	if err := rdb.Set(ctx, ck.seq, uint64(r.Seq)-1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, ownerKey(in.Key))
	rdb.ZRem(ctx, pendingKey, commitKey(in.Key))
	return r
}

// Another send recorded the seq while the dead reserve's INCR was missing: the retry finds that
// record in its slot and moves its own commit to the next seq.
func TestResumeAfterAnotherSendTookTheSeq(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	a, b := f.intent(t, 40), f.intent(t, 40)
	reserveDiedAfterHash(t, ctx, s, rdb, a)
	if c := reserveOne(t, ctx, s, b); c.Seq != 1 {
		t.Fatalf("the other send got seq %d, want 1 (the counter was at 0)", c.Seq)
	}
	retry := a
	retry.MessageID = f.intent(t, 1).MessageID
	c := reserveOne(t, ctx, s, retry)
	if c.Fresh || c.State != StateRecorded || c.Seq != 2 || c.MessageID != a.MessageID || !bytes.Equal(c.Record, AppendSeq(a.Record, 2)) {
		t.Fatalf("retry = %+v, want the first intent RECORDED at seq 2", c)
	}
	assertHistory(t, ctx, s, f, b, a)
	assertUnfinished(t, ctx, rdb, a)
	if n := counter(t, rdb, f); n != 2 {
		t.Errorf("counter = %d, want 2", n)
	}
}

// Another send reserved the same seq (two-step, not recorded yet) while the dead reserve's INCR
// was missing: whichever records first keeps the seq, the other moves on.
func TestResumeWhileAnotherSendHoldsTheSeq(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	a, b := f.intent(t, 40), f.intent(t, 40)
	reserveDiedAfterHash(t, ctx, s, rdb, a)
	if r, err := s.Reserve(ctx, b); err != nil || r.Seq != 1 {
		t.Fatalf("the other send reserved seq %d (%v), want 1", r.Seq, err)
	}
	if c := reserveOne(t, ctx, s, a); c.State != StateRecorded || c.Seq != 1 {
		t.Fatalf("retry = %v at seq %d, want RECORDED at 1", c.State, c.Seq)
	}
	d, err := s.Record(ctx, b.Key)
	if err != nil || d.State != StateRecorded || d.Seq != 2 || !bytes.Equal(d.Record, AppendSeq(b.Record, 2)) {
		t.Fatalf("the other send's Record = %+v, %v; want RECORDED at seq 2", d, err)
	}
	assertHistory(t, ctx, s, f, a, b)
	if n := counter(t, rdb, f); n != 2 {
		t.Errorf("counter = %d, want 2", n)
	}
}

// The dead reserve never wrote its owner key, and the client_message_id was used in another
// conversation since: the retry is refused like a fresh call and the dead commit is dropped (it
// was never recorded, produced or answered).
func TestResumeAfterAnotherConversationTookTheCmid(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	a := f.intent(t, 40)
	g := newFixture(t)
	for tagOf(f.tenant, g.conv) == tagOf(f.tenant, f.conv) { // another commit key, not an 'X'
		g = newFixture(t)
	}
	g.tenant, g.sender = f.tenant, f.sender
	other := g.intent(t, 40)
	other.Key.ClientMessageID = a.Key.ClientMessageID
	reserveDiedAfterHash(t, ctx, s, rdb, a)
	reserveOne(t, ctx, s, other)
	if _, errs := s.ReserveAndRecord(ctx, []Intent{a}); !errors.Is(errs[0], ErrIdentityConflict) {
		t.Fatalf("retry: %v, want the cross-conversation conflict", errs[0])
	}
	if _, found, err := s.LoadCommit(ctx, a.Key); found || err != nil {
		t.Fatalf("the dead commit is still there (found %v, err %v)", found, err)
	}
	if err := rdb.ZScore(ctx, pendingKey, commitKey(a.Key)).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the dead commit is still in the recovery index (%v)", err)
	}
	if o := rdb.Get(ctx, ownerKey(a.Key)).Val(); o != commitKey(other.Key) {
		t.Errorf("owner = %q, want the other conversation's commit", o)
	}
	if n := counter(t, rdb, f); n != 0 {
		t.Errorf("counter = %d, want 0 (the dead reserve never INCRed)", n)
	}
}

// A RECORDED commit without its owner key or recovery index entry (left by the reserve order
// before this one, which wrote them last) gets both back from a retry.
func TestResumeRestoresOwnerAndRecoveryEntry(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	a := f.intent(t, 40)
	first := reserveOne(t, ctx, s, a)
	rdb.Del(ctx, ownerKey(a.Key))
	rdb.ZRem(ctx, pendingKey, commitKey(a.Key))
	if c := reserveOne(t, ctx, s, a); c.Fresh || c.State != StateRecorded || c.Seq != first.Seq {
		t.Fatalf("retry = %+v", c)
	}
	assertUnfinished(t, ctx, rdb, a)
}

// assertHistory checks that the conversation's history is exactly want, in seq order.
func assertHistory(t *testing.T, ctx context.Context, s *Store, f fixture, want ...Intent) {
	t.Helper()
	p, err := s.HistoryPage(ctx, HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: Newer})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != len(want) {
		t.Fatalf("history has %d records, want %d", len(p.Records), len(want))
	}
	for i, in := range want {
		rec := decodeRecord(t, p.Records[i])
		mid := in.MessageID.Bytes()
		if !bytes.Equal(rec.GetMessageId(), mid[:]) || rec.GetConversationSeq() != uint64(i+1) {
			t.Errorf("history[%d] = message %x at seq %d, want %x at %d", i, rec.GetMessageId(), rec.GetConversationSeq(), mid, i+1)
		}
	}
}

// assertUnfinished checks the owner key and recovery index entry of an unfinished commit.
func assertUnfinished(t *testing.T, ctx context.Context, rdb *redis.Client, in Intent) {
	t.Helper()
	if o := rdb.Get(ctx, ownerKey(in.Key)).Val(); o != commitKey(in.Key) {
		t.Errorf("owner = %q, want the commit key", o)
	}
	if sc, err := rdb.ZScore(ctx, pendingKey, commitKey(in.Key)).Result(); err != nil || sc != float64(in.NowMs) {
		t.Errorf("recovery index score %v (%v), want reserved_at %d", sc, err, in.NowMs)
	}
}
