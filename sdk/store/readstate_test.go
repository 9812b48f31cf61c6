package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func session(latest, read contract.ConversationSeq) SessionState {
	return SessionState{Conversation: directConv(), Peer: peer, LatestSeq: latest, ReadSeq: read,
		LatestMessageID: mid(uint64(latest)), LastActivityMs: int64(latest)}
}

func unsent(t *testing.T, s *Store) []ReadMark {
	t.Helper()
	marks, err := s.UnsentReads(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	return marks
}

// The server's watermark merges forward only: a lower server value never lowers the local one
// (which is then owed to the server), a higher one raises it and recounts unread.
func TestMergeNeverLowersTheReadWatermark(t *testing.T) {
	tests := []struct {
		name       string
		localRead  contract.ConversationSeq // MarkRead before the merge; 0 = none
		serverRead []contract.ConversationSeq
		wantRead   contract.ConversationSeq
		wantUnread uint32
		wantOwed   bool // a MARK_READ is owed afterwards
		wantEvent  bool // the last merge reported the conversation
	}{
		{"server higher raises", 2, []contract.ConversationSeq{5}, 5, 1, false, true},
		{"server lower is ignored and owed", 5, []contract.ConversationSeq{3}, 5, 1, true, false},
		{"equal changes nothing", 4, []contract.ConversationSeq{4}, 4, 2, false, false},
		{"a later lower report never undoes a raise", 0, []contract.ConversationSeq{6, 2}, 6, 0, true, false},
		{"zero from the server keeps a local read", 3, []contract.ConversationSeq{0}, 3, 3, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, testIdentity())
			var msgs []Message
			for i := uint64(1); i <= 6; i++ {
				msgs = append(msgs, msg(i, peer))
			}
			if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			if tc.localRead > 0 {
				if _, err := s.MarkRead(ctx, directConv(), tc.localRead); err != nil {
					t.Fatal(err)
				}
			}
			var mg Merged
			for _, r := range tc.serverRead {
				var err error
				if mg, err = s.MergeSessions(ctx, []SessionState{session(6, r)}); err != nil {
					t.Fatal(err)
				}
			}
			convs, _ := s.Conversations(ctx)
			if c := convs[0]; c.ReadSeq != tc.wantRead || c.Unread != tc.wantUnread {
				t.Fatalf("read %d unread %d, want %d and %d", c.ReadSeq, c.Unread, tc.wantRead, tc.wantUnread)
			}
			if owed := len(unsent(t, s)) == 1; owed != tc.wantOwed {
				t.Fatalf("owed MARK_READ %v, want %v", owed, tc.wantOwed)
			}
			if got := len(mg.Conversations) == 1; got != tc.wantEvent {
				t.Fatalf("merge reported %d conversations, want event %v", len(mg.Conversations), tc.wantEvent)
			}
		})
	}
}

// A conversation the device never saw is recorded with the server's values; when something lies
// after its read watermark it gets a gap there, so the backfill fetches what can be unread.
func TestMergeDiscoversConversations(t *testing.T) {
	s := openTest(t, testIdentity())
	other := contract.DirectConversationID(contract.TenantID{}, self, 42)
	mg, err := s.MergeSessions(ctx, []SessionState{session(8, 5),
		{Conversation: other, Peer: 42, LatestSeq: 3, ReadSeq: 3, LastActivityMs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if mg.Discovered != 2 || len(mg.Conversations) != 2 {
		t.Fatalf("merge %+v, want 2 discovered and reported", mg)
	}
	convs, _ := s.Conversations(ctx)
	byID := map[contract.ConversationID]Conversation{}
	for _, c := range convs {
		byID[c.ID] = c
	}
	c := byID[directConv()]
	if c.Peer != peer || c.LatestSeq != 8 || c.ReadSeq != 5 || c.Unread != 0 || !c.Incomplete || c.GapFromSeq != 5 ||
		c.LatestMessageID != mid(8) {
		t.Fatalf("discovered conversation %+v, want peer, latest 8, read 5, gap from 5", c)
	}
	if o := byID[other]; o.Incomplete || o.ReadSeq != 3 || o.Peer != 42 {
		t.Fatalf("fully read discovered conversation %+v, want no gap", o)
	}
	if n := len(unsent(t, s)); n != 0 {
		t.Fatalf("%d MARK_READs owed for watermarks that came from the server", n)
	}
	gaps, _ := s.Gaps(ctx)
	if len(gaps) != 1 || gaps[0].FromSeq != 5 {
		t.Fatalf("gaps %+v, want one from the read watermark 5", gaps)
	}
}

// A fresh store that learns its own messages and the server's watermark in either order never
// counts them as unread. Own messages are read on the server too (it marks them on projection),
// so they owe no MARK_READ — unless a list taken before that projection reports less, in which
// case sending the local watermark back is exactly how the two sides converge.
func TestOwnMessagesNeverUnreadOnAFreshStore(t *testing.T) {
	own := []Message{msg(1, self), msg(2, self), msg(3, self)}
	for _, listFirst := range []bool{true, false} {
		s := openTest(t, testIdentity())
		steps := []func() error{
			func() error { _, err := s.MergeSessions(ctx, []SessionState{session(3, 0)}); return err },
			func() error { _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: own}); return err },
		}
		if !listFirst {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatal(err)
			}
			convs, _ := s.Conversations(ctx)
			if convs[0].Unread != 0 {
				t.Fatalf("list first %v: own messages count as unread: %+v", listFirst, convs[0])
			}
		}
		want := 0
		if !listFirst {
			want = 1
		}
		if n := len(unsent(t, s)); n != want {
			t.Fatalf("list first %v: %d MARK_READs owed, want %d", listFirst, n, want)
		}
	}
}

// MarkRead is owed until acknowledged; the ACK's absolute value moves the watermark forward
// only, and a request the server clamped is not owed again.
func TestUnsentReadsUntilAcknowledged(t *testing.T) {
	s := openTest(t, testIdentity())
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, peer), msg(3, peer)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkRead(ctx, directConv(), 2); err != nil {
		t.Fatal(err)
	}
	if m := unsent(t, s); len(m) != 1 || m[0].Seq != 2 || m[0].Conversation != directConv() {
		t.Fatalf("owed %+v, want seq 2", m)
	}
	c, changed, err := s.AckRead(ctx, directConv(), 2, 3) // another device read further
	if err != nil || !changed || c.ReadSeq != 3 || c.Unread != 0 {
		t.Fatalf("ack: %+v changed %v err %v, want read 3 unread 0", c, changed, err)
	}
	if n := len(unsent(t, s)); n != 0 {
		t.Fatalf("%d owed after the ACK", n)
	}
	if c, changed, _ = s.AckRead(ctx, directConv(), 1, 1); changed || c.ReadSeq != 3 {
		t.Fatalf("a stale ACK moved the watermark: %+v", c)
	}
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(4, peer)}}); err != nil {
		t.Fatal(err)
	}
	_, _ = s.MarkRead(ctx, directConv(), 4)
	if _, _, err := s.AckRead(ctx, directConv(), 4, 0); err != nil { // refused: recorded, not owed again
		t.Fatal(err)
	}
	if n := len(unsent(t, s)); n != 0 {
		t.Fatalf("%d owed after a definite refusal", n)
	}
}

// A version-1 database gains read_sent_seq equal to read_seq (nothing owed until a login's merge
// says otherwise) and keeps its data.
func TestMigrateVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(ctx, path, testIdentity())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, self)}}); err != nil {
		t.Fatal(err)
	}
	downgrade(t, s, 1)
	_ = s.Close()
	s, err = Open(ctx, path, testIdentity())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	var sent sql.NullInt64
	_ = s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
	_ = s.db.QueryRowContext(ctx, "SELECT read_sent_seq FROM conversations").Scan(&sent)
	convs, _ := s.Conversations(ctx)
	if version != schemaVersion || sent.Int64 != 2 || len(convs) != 1 || convs[0].ReadSeq != 2 {
		t.Fatalf("after migration: version %d read_sent_seq %v conversations %+v", version, sent, convs)
	}
	if n := len(unsent(t, s)); n != 0 {
		t.Fatalf("%d MARK_READs owed right after migrating", n)
	}
}

// downgrade turns a current store into the schema of version v, as an older SDK left it.
func downgrade(t *testing.T, s *Store, v int) {
	t.Helper()
	steps := map[int][]string{ // undoes migrations[v-1], the step from v to v+1
		3: {"DROP TABLE amendments"},
		2: {"DROP TABLE group_creates", "ALTER TABLE conversations DROP COLUMN head_seq"},
		1: {"ALTER TABLE conversations DROP COLUMN read_sent_seq"},
	}
	for from := schemaVersion - 1; from >= v; from-- {
		for _, q := range steps[from] {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				t.Fatalf("downgrade to %d: %s: %v", v, q, err)
			}
		}
	}
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
}
