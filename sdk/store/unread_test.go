package store

import (
	"testing"

	"github.com/qim-dev/qim/contract"
)

// Unread follows the one definition: seq > read_seq and sender ≠ self, CONTROL, recalled and
// deleted excluded, never latest − read.
func TestUnreadDefinition(t *testing.T) {
	control := msg(4, peer)
	control.Type = contract.MessageControl
	recalled := msg(5, peer)
	recalled.Flags = FlagRecalled
	tests := []struct {
		name     string
		msgs     []Message
		markRead contract.ConversationSeq
		want     uint32
	}{
		{"peer messages count", []Message{msg(1, peer), msg(2, peer)}, 0, 2},
		{"own messages never count", []Message{msg(1, peer), msg(2, self), msg(3, self)}, 0, 0},
		{"control and recalled never count", []Message{msg(1, peer), control, recalled}, 0, 1},
		{"holes do not count", []Message{msg(1, peer), msg(10, peer)}, 0, 2},
		{"read watermark", []Message{msg(1, peer), msg(2, peer), msg(3, peer)}, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, testIdentity())
			a, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: tc.msgs})
			if err != nil {
				t.Fatal(err)
			}
			c := a.Conversations[len(a.Conversations)-1]
			if tc.markRead > 0 {
				if c, err = s.MarkRead(ctx, directConv(), tc.markRead); err != nil {
					t.Fatal(err)
				}
			}
			if c.Unread != tc.want || !c.UnreadExact {
				t.Fatalf("unread %d (exact %v), want %d", c.Unread, c.UnreadExact, tc.want)
			}
		})
	}
}

// Sending is reading: an own message at seq s raises read_seq to s, so the peer messages before
// it stop counting. The watermark never goes back and never passes the latest local seq.
func TestSendingIsReadingAndReadNeverGoesBack(t *testing.T) {
	s := openTest(t, testIdentity())
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, self), msg(3, peer)}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.MarkRead(ctx, directConv(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadSeq != 2 || c.Unread != 1 {
		t.Fatalf("read_seq %d unread %d, want 2 and 1", c.ReadSeq, c.Unread)
	}
	if c, _ = s.MarkRead(ctx, directConv(), 99); c.ReadSeq != 3 || c.Unread != 0 {
		t.Fatalf("read beyond latest: read_seq %d unread %d, want clamped to 3 and 0", c.ReadSeq, c.Unread)
	}
}

func TestUnreadSaturates(t *testing.T) {
	s := openTest(t, testIdentity())
	var msgs []Message
	for i := uint64(1); i <= contract.UnreadExactWindow+5; i++ {
		msgs = append(msgs, msg(i, peer))
	}
	a, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Conversations[0]; c.Unread != contract.UnreadExactWindow || c.UnreadExact {
		t.Fatalf("unread %d exact %v, want saturated %d", c.Unread, c.UnreadExact, contract.UnreadExactWindow)
	}
}

func TestRebuildResetAndGapBackfill(t *testing.T) {
	s := openTest(t, testIdentity())
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, peer)}, Cursor: seqp(70)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, Batch{Source: SourcePush, Messages: []Message{msg(6, peer)}}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Cursor(ctx)
	cur, err := s.ResetForRebuild(ctx, "cursor_expired")
	if err != nil {
		t.Fatal(err)
	}
	if cur.Seq != 0 || cur.Generation != before.Generation+1 || cur.LastResetReason != "cursor_expired" {
		t.Fatalf("after reset: %+v (before %+v)", cur, before)
	}
	gaps, _ := s.Gaps(ctx)
	// The gap starts at the highest seq applied through a pull (2), not at the pushed 6: a push
	// may have skipped messages, only pulls and history are contiguous.
	if len(gaps) != 1 || gaps[0].FromSeq != 2 {
		t.Fatalf("gaps %+v, want one from seq 2", gaps)
	}
	msgs, _, _ := s.Messages(ctx, directConv(), 0, Older, 10)
	if len(msgs) != 3 {
		t.Fatalf("a reset dropped local messages: %d left", len(msgs))
	}
	a, err := s.Apply(ctx, Batch{Source: SourceHistory, Messages: []Message{msg(3, peer), msg(4, peer)},
		Gap: &GapUpdate{Conversation: directConv(), FromSeq: 4}})
	if err != nil || len(a.Added) != 2 {
		t.Fatalf("backfill page: %+v %v", a, err)
	}
	if gaps, _ = s.Gaps(ctx); len(gaps) != 1 || gaps[0].FromSeq != 4 {
		t.Fatalf("gap after a page: %+v, want from 4", gaps)
	}
	a, err = s.Apply(ctx, Batch{Source: SourceHistory, Messages: []Message{msg(5, peer), msg(6, peer)},
		Gap: &GapUpdate{Conversation: directConv(), Done: true}})
	if err != nil || len(a.Added) != 1 || a.Known != 1 {
		t.Fatalf("last backfill page: %+v %v", a, err)
	}
	if gaps, _ = s.Gaps(ctx); len(gaps) != 0 {
		t.Fatalf("gap not closed: %+v", gaps)
	}
	if c := a.Conversations[0]; c.Incomplete || c.Unread != 6 {
		t.Fatalf("conversation after backfill %+v", c)
	}
}

func TestMessagesPaging(t *testing.T) {
	s := openTest(t, testIdentity())
	var msgs []Message
	for _, n := range []uint64{1, 2, 4, 7, 9} {
		msgs = append(msgs, msg(n, peer))
	}
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		anchor contract.ConversationSeq
		dir    Direction
		limit  int
		want   []contract.ConversationSeq
		more   bool
	}{
		{0, Older, 2, []contract.ConversationSeq{7, 9}, true},
		{7, Older, 2, []contract.ConversationSeq{2, 4}, true},
		{2, Older, 5, []contract.ConversationSeq{1}, false},
		{0, Newer, 3, []contract.ConversationSeq{1, 2, 4}, true},
		{4, Newer, 3, []contract.ConversationSeq{7, 9}, false},
	}
	for _, tc := range tests {
		got, more, err := s.Messages(ctx, directConv(), tc.anchor, tc.dir, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []contract.ConversationSeq
		for _, m := range got {
			seqs = append(seqs, m.Seq)
		}
		if len(seqs) != len(tc.want) || more != tc.more {
			t.Fatalf("anchor %d dir %d: %v more=%v, want %v more=%v", tc.anchor, tc.dir, seqs, more, tc.want, tc.more)
		}
		for i := range seqs {
			if seqs[i] != tc.want[i] {
				t.Fatalf("anchor %d dir %d: %v, want %v", tc.anchor, tc.dir, seqs, tc.want)
			}
		}
	}
}
