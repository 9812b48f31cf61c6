package msgstore

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

// commitN commits n messages of 5-byte bodies into f's conversation and returns their seqs.
func commitN(t *testing.T, s *Store, f fixture, n int) []uint64 {
	t.Helper()
	ctx := testCtx(t)
	seqs := make([]uint64, n)
	for i := range seqs {
		in := f.intent(t, 5)
		c := reserveOne(t, ctx, s, in)
		if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: time.Now().UnixMilli()}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		seqs[i] = uint64(c.Seq)
	}
	return seqs
}

// amendAt commits one amendment of target (a real commit of the conversation, so its seq is
// above the target's) with the given flag and body, and returns its seq.
func amendAt(t *testing.T, s *Store, f fixture, target uint64, flag uint32, body []byte) uint64 {
	t.Helper()
	ctx := testCtx(t)
	in := f.intent(t, 3)
	c := reserveOne(t, ctx, s, in)
	a := &Amendment{Target: target, Seq: uint64(c.Seq), Flags: flag, Body: body, ExpireAtMs: time.Now().Add(time.Hour).UnixMilli()}
	if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: time.Now().UnixMilli(), Amend: a}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	return uint64(c.Seq)
}

// pageBySeq reads the whole conversation with PULL_HISTORY's read and indexes it by seq.
func pageBySeq(t *testing.T, s *Store, f fixture) map[uint64][]byte {
	t.Helper()
	p, err := s.HistoryPage(testCtx(t), HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: Older, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]byte{}
	for _, b := range p.Records {
		out[decodeRecord(t, b).GetConversationSeq()] = b
	}
	return out
}

func TestAmendmentsAreServedByHistoryAndTails(t *testing.T) {
	s, f := New(coreClient(t)), newFixture(t)
	seqs := commitN(t, s, f, 4)
	amendAt(t, s, f, seqs[0], contract.FlagEdited, []byte("edit one"))
	amendAt(t, s, f, seqs[0], contract.FlagEdited, []byte("edit two"))
	amendAt(t, s, f, seqs[1], contract.FlagRecalled, nil)
	amendAt(t, s, f, seqs[2], contract.FlagEdited, []byte("edited, then deleted"))
	latest := amendAt(t, s, f, seqs[2], contract.FlagDeleted, nil)

	want := map[uint64]struct {
		flags uint32
		body  string
	}{seqs[0]: {contract.FlagEdited, "edit two"}, seqs[1]: {contract.FlagRecalled, ""},
		seqs[2]: {contract.FlagEdited | contract.FlagDeleted, ""}, seqs[3]: {0, "abcde"}}
	check := func(where string, recs map[uint64][]byte) {
		t.Helper()
		for seq, w := range want {
			r := decodeRecord(t, recs[seq])
			if r.GetFlags() != w.flags || string(r.GetBody()) != w.body {
				t.Errorf("%s seq %d: flags %d body %q, want %d %q", where, seq, r.GetFlags(), r.GetBody(), w.flags, w.body)
			}
		}
	}
	check("history", pageBySeq(t, s, f))
	tails, err := s.Tails(testCtx(t), f.tenant, []TailQuery{{Conversation: f.conv, Latest: latest, After: 0, Min: 16}})
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[uint64][]byte{}
	for _, b := range tails[0].Records {
		bySeq[decodeRecord(t, b).GetConversationSeq()] = b
	}
	check("tail", bySeq)
}

// The merge is order-free and idempotent: the recovery loop or a retry may merge an amendment
// again, and two amendments of one target may be marked in either order.
func TestAmendmentMergeIsOrderFreeAndIdempotent(t *testing.T) {
	s, f := New(coreClient(t)), newFixture(t)
	seqs := commitN(t, s, f, 1)
	ctx := testCtx(t)
	exp := time.Now().Add(time.Hour).UnixMilli()
	newer := &Amendment{Target: seqs[0], Seq: seqs[0] + 20, Flags: contract.FlagEdited, Body: []byte("newer"), ExpireAtMs: exp}
	older := &Amendment{Target: seqs[0], Seq: seqs[0] + 10, Flags: contract.FlagEdited, Body: []byte("older"), ExpireAtMs: exp}
	for _, a := range []*Amendment{newer, older, older} {
		errs := make([]error, 1)
		s.indexAmendments(ctx, []MarkRequest{{Key: CommitKey{Tenant: f.tenant, Conversation: f.conv}, Amend: a}}, errs)
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	if r := decodeRecord(t, pageBySeq(t, s, f)[seqs[0]]); string(r.GetBody()) != "newer" || r.GetFlags() != contract.FlagEdited {
		t.Fatalf("after newer, older, older: flags %d body %q, want the newer edit", r.GetFlags(), r.GetBody())
	}
	ttl := coreClient(t).PTTL(ctx, newConvKeys(f.tenant, f.conv).amend()).Val()
	if ttl <= 0 || ttl > time.Hour {
		t.Fatalf("index TTL %s, want (0, 1h]", ttl)
	}
}

// A value that does not parse fails the read instead of serving the message unamended.
func TestCorruptAmendmentFailsTheRead(t *testing.T) {
	rdb := coreClient(t)
	s, f := New(rdb), newFixture(t)
	seqs := commitN(t, s, f, 2)
	rdb.HSet(testCtx(t), newConvKeys(f.tenant, f.conv).amend(), seqs[1], "not a value")
	_, err := s.HistoryPage(testCtx(t), HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: Older})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("history over a corrupt index value: %v, want ErrCorrupt", err)
	}
}

// An amendment that does not come after its target is refused and the commit is not marked.
func TestAmendmentBeforeItsTargetIsRefused(t *testing.T) {
	s, f := New(coreClient(t)), newFixture(t)
	ctx := testCtx(t)
	seqs := commitN(t, s, f, 1)
	in := f.intent(t, 3)
	reserveOne(t, ctx, s, in)
	bad := &Amendment{Target: seqs[0] + 5, Seq: seqs[0] + 1, Flags: contract.FlagRecalled}
	errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: time.Now().UnixMilli(), Amend: bad}})
	if !errors.Is(errs[0], ErrInvalidArgument) {
		t.Fatalf("amendment before its target: %v, want ErrInvalidArgument", errs[0])
	}
	if c, _, err := s.LoadCommit(ctx, in.Key); err != nil || c.State == StateCommitted {
		t.Fatalf("commit %v (%v): an amendment that was not indexed must not be COMMITTED", c.State, err)
	}
	if b := pageBySeq(t, s, f)[seqs[0]]; !bytes.Contains(b, []byte("abcde")) {
		t.Fatal("the target changed")
	}
}
