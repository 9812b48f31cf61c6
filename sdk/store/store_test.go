package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/qim-dev/qim/contract"
)

const self, peer = contract.UserID(7), contract.UserID(9)

func testIdentity() Identity {
	return Identity{EndpointScope: contract.EndpointScope("v1|tcp|127.0.0.1:7000||"), User: self}
}

var ctx = context.Background()

func mid(n uint64) contract.MessageID {
	id, err := contract.NewMessageID(1_700_000_000_000+n, 0, 1, 1)
	if err != nil {
		panic(err)
	}
	return id
}

func directConv() contract.ConversationID {
	return contract.DirectConversationID(contract.TenantID{}, self, peer)
}

// msg builds a message of the direct conversation with peer.
func msg(n uint64, sender contract.UserID) Message {
	return Message{ID: mid(n), Conversation: directConv(), Seq: contract.ConversationSeq(n), Sender: sender,
		Type: contract.MessageText, HasBody: true, Body: []byte("m"), SentAtMs: int64(n)}
}

func seqp(v uint64) *contract.MailboxSeq { s := contract.MailboxSeq(v); return &s }

func TestPathIsStableAndNeedsADataDir(t *testing.T) {
	id := testIdentity()
	p1, err := Path("/data", id)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := Path("/data", id)
	want := filepath.Join("/data", id.EndpointScope, "00000000000000000000000000000000", "7", FileName)
	if p1 != p2 || p1 != want {
		t.Fatalf("path %q / %q, want %q", p1, p2, want)
	}
	for _, dir := range []string{"", "relative/dir"} {
		if _, err := Path(dir, id); !errors.Is(err, ErrNoDataDir) {
			t.Errorf("Path(%q) = %v, want ErrNoDataDir", dir, err)
		}
	}
	if _, err := Open(ctx, "", id); !errors.Is(err, ErrNoDataDir) {
		t.Errorf("Open without a path = %v, want ErrNoDataDir", err)
	}
}

func TestReopenChecksIdentity(t *testing.T) {
	id := testIdentity()
	path := filepath.Join(t.TempDir(), "x", FileName)
	s, err := Open(ctx, path, id)
	if err != nil {
		t.Fatal(err)
	}
	install := s.InstallID()
	s.Close()
	s, err = Open(ctx, path, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstallID() != install {
		t.Fatal("install id changed across reopen: client_message_ids would change domain")
	}
	s.Close()
	other := id
	other.User = 8
	if _, err := Open(ctx, path, other); !errors.Is(err, ErrIdentity) {
		t.Fatalf("another user's open = %v, want ErrIdentity", err)
	}
}

// Client message ids never repeat, also across a crash (reopen without using the whole range):
// every reopen continues above the durable reservation.
func TestOrdinalsNeverRepeatAcrossReopen(t *testing.T) {
	id := testIdentity()
	path := filepath.Join(t.TempDir(), FileName)
	seen := map[contract.ClientMessageID]bool{}
	var last uint64
	for round := 0; round < 4; round++ {
		s, err := Open(ctx, path, id)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := s.ReservedOrdinals(ctx)
		for i := 0; i < 70; i++ { // crosses one range boundary per round
			p, err := s.AddPending(ctx, NewPending{NowMs: 1, Peer: peer, Type: contract.MessageText, Body: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			if seen[p.ClientMessageID] {
				t.Fatalf("round %d: client_message_id of ordinal %d repeated", round, p.Ordinal)
			}
			if round > 0 && i == 0 && p.Ordinal < before {
				t.Fatalf("first ordinal after reopen %d is below the durable reservation %d", p.Ordinal, before)
			}
			if p.Ordinal < last && len(seen) > 0 {
				t.Fatalf("ordinal went back from %d to %d", last, p.Ordinal)
			}
			seen[p.ClientMessageID], last = true, p.Ordinal
		}
		s.Close() // the unused rest of the range is abandoned, never reused
	}
}

func TestApplyIsAtomicAndDeduplicates(t *testing.T) {
	s := openTest(t, testIdentity())
	b := Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, peer)}, Cursor: seqp(100)}
	a, err := s.Apply(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Added) != 2 || a.Cursor.Seq != 100 || len(a.Conversations) != 1 || a.Conversations[0].Unread != 2 {
		t.Fatalf("first apply: %+v", a)
	}
	a, err = s.Apply(ctx, b)
	if err != nil || len(a.Added) != 0 || a.Known != 2 || len(a.Conversations) != 0 {
		t.Fatalf("replayed batch: %+v, %v (want nothing new)", a, err)
	}
	// A batch whose second message conflicts is refused whole: the first is not stored and the
	// cursor does not move.
	bad := msg(3, peer)
	clash := msg(4, peer)
	clash.Seq = 1
	_, err = s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{bad, clash}, Cursor: seqp(200)})
	var sc *SeqConflictError
	if !errors.As(err, &sc) {
		t.Fatalf("conflicting seq: %v, want SeqConflictError", err)
	}
	msgs, _, _ := s.Messages(ctx, directConv(), 0, Older, 10)
	cur, _ := s.Cursor(ctx)
	if len(msgs) != 2 || cur.Seq != 100 {
		t.Fatalf("after refused batch: %d messages, cursor %d; want 2 and 100", len(msgs), cur.Seq)
	}
}

func TestCursorMovesOnlyForwardAndOnlyWithAPull(t *testing.T) {
	tests := []struct {
		name   string
		batch  Batch
		want   contract.MailboxSeq
		regres bool
	}{
		{"pull advances", Batch{Source: SourcePull, Messages: []Message{msg(1, peer)}, Cursor: seqp(50)}, 50, false},
		{"push never moves it", Batch{Source: SourcePush, Messages: []Message{msg(2, peer)}}, 50, false},
		{"history never moves it", Batch{Source: SourceHistory, Messages: []Message{msg(3, peer)}}, 50, false},
		{"empty pull may confirm it", Batch{Source: SourcePull, Cursor: seqp(50)}, 50, false},
		{"backwards is refused", Batch{Source: SourcePull, Messages: []Message{msg(4, peer)}, Cursor: seqp(10)}, 50, true},
	}
	s := openTest(t, testIdentity())
	for _, tc := range tests {
		_, err := s.Apply(ctx, tc.batch)
		var re *CursorRegressionError
		if tc.regres != errors.As(err, &re) || (!tc.regres && err != nil) {
			t.Fatalf("%s: err %v", tc.name, err)
		}
		if cur, _ := s.Cursor(ctx); cur.Seq != tc.want {
			t.Fatalf("%s: cursor %d, want %d", tc.name, cur.Seq, tc.want)
		}
	}
	if msgs, _, _ := s.Messages(ctx, directConv(), 0, Older, 10); len(msgs) != 3 {
		t.Fatalf("the refused batch's message was stored: %d messages", len(msgs))
	}
}

func TestPendingResolution(t *testing.T) {
	tests := []struct {
		name    string
		resolve func(s *Store, p Pending) (Applied, error)
	}{
		{"by SEND_ACK", func(s *Store, p Pending) (Applied, error) {
			a, _, err := s.ResolveAck(ctx, Ack{ClientMessageID: p.ClientMessageID, MessageID: mid(5), Conversation: p.Conversation, Seq: 5})
			return a, err
		}},
		{"by own mailbox copy", func(s *Store, p Pending) (Applied, error) {
			m := msg(5, self)
			m.ClientMessageID = p.ClientMessageID
			return s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{m}, Cursor: seqp(9)})
		}},
		{"by history", func(s *Store, p Pending) (Applied, error) {
			m := msg(5, self)
			m.ClientMessageID = p.ClientMessageID
			return s.Apply(ctx, Batch{Source: SourceHistory, Messages: []Message{m}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, testIdentity())
			p, err := s.AddPending(ctx, NewPending{NowMs: 1, Peer: peer, Type: contract.MessageText, Body: []byte("hi")})
			if err != nil {
				t.Fatal(err)
			}
			a, err := tc.resolve(s, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Resolved) != 1 || a.Resolved[0].ClientMessageID != p.ClientMessageID || len(a.Added) != 0 {
				t.Fatalf("applied %+v, want exactly the pending resolved", a)
			}
			if rest, _ := s.PendingAll(ctx); len(rest) != 0 {
				t.Fatalf("still pending: %+v", rest)
			}
			// A second proof (the ACK after the mailbox copy, or the reverse) changes nothing.
			again, found, err := s.ResolveAck(ctx, Ack{ClientMessageID: p.ClientMessageID, MessageID: mid(5), Conversation: p.Conversation, Seq: 5})
			if err != nil || found || len(again.Resolved) != 0 {
				t.Fatalf("second resolution: %+v found=%v err=%v", again, found, err)
			}
			m, ok, _ := s.MessageByClientID(ctx, p.ClientMessageID)
			if !ok || m.Seq != 5 || string(m.Body) != "hi" && string(m.Body) != "m" {
				t.Fatalf("committed message %+v ok=%v", m, ok)
			}
		})
	}
}

func TestFailPendingStopsResend(t *testing.T) {
	s := openTest(t, testIdentity())
	p, _ := s.AddPending(ctx, NewPending{NowMs: 1, Peer: peer, Type: contract.MessageText})
	ok, err := s.FailPending(ctx, p.ClientMessageID, contract.ErrCodePayloadTooLarge, "too big")
	if err != nil || !ok {
		t.Fatalf("fail: %v %v", ok, err)
	}
	if q, _ := s.QueuedAfter(ctx, -1, 10); len(q) != 0 {
		t.Fatalf("a failed send is still queued: %+v", q)
	}
	all, _ := s.PendingAll(ctx)
	if len(all) != 1 || all[0].State != PendingFailed || all[0].ErrorCode != contract.ErrCodePayloadTooLarge {
		t.Fatalf("pending list %+v", all)
	}
}
