package store

import (
	"testing"

	"github.com/qim-dev/qim/contract"
)

// amendMsg is the amendment CONTROL message at seq n of the target at seq target.
func amendMsg(n, target uint64, flag uint32, body string) Message {
	m := msg(n, peer)
	m.Type, m.CustomType = contract.MessageControl, contract.AmendCustomType
	a := &Amend{Target: contract.ConversationSeq(target), Flags: flag}
	if flag == contract.FlagEdited {
		a.Body = []byte(body)
	}
	m.Amend = a
	return m
}

func stored(t *testing.T, s *Store, seq uint64) Message {
	t.Helper()
	msgs, _, err := s.Messages(ctx, directConv(), contract.ConversationSeq(seq+1), Older, 1)
	if err != nil || len(msgs) != 1 || msgs[0].Seq != contract.ConversationSeq(seq) {
		t.Fatalf("stored message at %d: %v (%v)", seq, msgs, err)
	}
	return msgs[0]
}

// An amendment changes the stored target in the batch that carries it, reports it, and the
// unread count leaves a recalled message out.
func TestAmendmentChangesTheStoredTarget(t *testing.T) {
	s := openTest(t, testIdentity())
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, peer)}}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{amendMsg(3, 2, contract.FlagRecalled, ""),
		amendMsg(4, 1, contract.FlagEdited, "new words")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Amended) != 2 || a.Amended[0].Seq != 2 || a.Amended[1].Seq != 1 {
		t.Fatalf("amended %v, want seqs 2 and 1", a.Amended)
	}
	if c := a.Conversations[0]; c.Unread != 1 {
		t.Fatalf("unread %d after a recall of one of two, want 1", c.Unread)
	}
	if m := stored(t, s, 2); m.Flags != contract.FlagRecalled || m.HasBody || len(m.Body) != 0 {
		t.Fatalf("recalled message stored as %+v", m)
	}
	if m := stored(t, s, 1); m.Flags != contract.FlagEdited || string(m.Body) != "new words" {
		t.Fatalf("edited message stored as %+v", m)
	}
}

// A target that arrives after its amendment is stored amended, and a later copy of a recalled
// message (a mailbox entry with the original body) never brings the body back.
func TestAmendmentBeforeItsTargetAndLateCopies(t *testing.T) {
	s := openTest(t, testIdentity())
	if _, err := s.Apply(ctx, Batch{Source: SourcePush, Messages: []Message{amendMsg(5, 2, contract.FlagDeleted, "")}}); err != nil {
		t.Fatal(err)
	}
	late := msg(2, peer)
	a, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{late}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Added) != 1 || a.Added[0].Flags != contract.FlagDeleted || a.Added[0].HasBody {
		t.Fatalf("late target added as %+v, want DELETED without a body", a.Added)
	}
	if _, err := s.Apply(ctx, Batch{Source: SourceHistory, Messages: []Message{late}}); err != nil {
		t.Fatal(err)
	}
	if m := stored(t, s, 2); m.HasBody || m.Flags != contract.FlagDeleted {
		t.Fatalf("a later copy brought the body back: %+v", m)
	}
	if c := a.Conversations[0]; c.Unread != 0 {
		t.Fatalf("unread %d, want 0: the only peer message is deleted", c.Unread)
	}
}

// Edits merge like the server's index: the newest edit wins whatever order they arrive in, and
// a recall drops the body for good.
func TestAmendmentMergeOrder(t *testing.T) {
	s := openTest(t, testIdentity())
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer),
		amendMsg(9, 1, contract.FlagEdited, "newest"), amendMsg(4, 1, contract.FlagEdited, "older")}}); err != nil {
		t.Fatal(err)
	}
	if m := stored(t, s, 1); string(m.Body) != "newest" {
		t.Fatalf("edits out of order left %q, want the newest", m.Body)
	}
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{amendMsg(12, 1, contract.FlagRecalled, ""),
		amendMsg(13, 1, contract.FlagEdited, "after the recall")}}); err != nil {
		t.Fatal(err)
	}
	if m := stored(t, s, 1); m.HasBody || m.Flags != contract.FlagEdited|contract.FlagRecalled {
		t.Fatalf("after a recall: %+v, want no body", m)
	}
}
