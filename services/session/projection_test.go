package session

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// The projection puts every conversation into both participants' lists, newest activity first,
// and each row carries the canonical head and the unread count by definition: holes, the user's
// own messages, CONTROL and recalled messages never count; sending marks the conversation read
// for the sender.
func TestProjectionListAndUnreadDefinition(t *testing.T) {
	e := newEnv(t, 4)
	r := e.mustRun(nil)
	alice, bob, carol := e.user(), e.user(), e.user()
	ab := e.conv(alice, bob)
	seqs := e.send(
		msg{from: bob, to: alice},                               // 1 unread for alice… until she answers
		msg{from: bob, to: alice},                               // 2
		msg{from: alice, to: bob},                               // 3 alice answers: her read watermark moves to 3
		msg{from: bob, to: alice},                               // 4 unread
		msg{from: bob, to: alice, typ: contract.MessageControl}, // 5 CONTROL: never unread
		msg{from: bob, to: alice, flags: flagRecalled},          // 6 recalled: never unread
		msg{from: bob, to: alice, hole: true},                   // 7 reserved, never recorded: a hole
		msg{from: bob, to: alice},                               // 8 unread
	)
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("seqs = %v", seqs)
	}
	time.Sleep(5 * time.Millisecond) // carol's message is strictly newer activity
	e.send(msg{from: carol, to: alice})

	var list []*qimv1.SessionEntry
	eventually(t, 20*time.Second, "alice's list to hold both conversations", func() bool {
		list = r.list(alice)
		a := findEntry(list, ab)
		return len(list) == 2 && a != nil && a.GetLatestConversationSeq() == 8
	})
	if !bytes.Equal(list[0].GetConversationId(), b16(e.conv(alice, carol))) {
		t.Fatal("the newest activity (carol) is not first")
	}
	a := findEntry(list, ab)
	if a.GetReadConversationSeq() != 3 || a.GetUnreadCount() != 2 || !a.GetUnreadExact() {
		t.Fatalf("alice/bob row: read %d unread %d exact %v, want read 3, unread 2 (seqs 4 and 8), exact",
			a.GetReadConversationSeq(), a.GetUnreadCount(), a.GetUnreadExact())
	}
	if a.GetHead().GetConversationSeq() != 8 || string(a.GetHead().GetBody()) != "body" || len(a.GetHead().GetClientMessageId()) != 0 {
		t.Fatalf("head = %v, want seq 8 with its body and no anchor (alice is not the sender)", a.GetHead())
	}
	if a.GetPeerUserId() != uint64(bob) || a.GetConversationKind() != uint32(contract.KindDirect) {
		t.Fatalf("peer %d kind %d", a.GetPeerUserId(), a.GetConversationKind())
	}
	if c := findEntry(list, e.conv(alice, carol)); c.GetUnreadCount() != 1 || c.GetPeerUserId() != uint64(carol) {
		t.Fatalf("alice/carol row = %v", c)
	}
	// bob sent seq 8 last, so his watermark is 8 and nothing is unread for him.
	eventually(t, 20*time.Second, "bob's row", func() bool {
		b := findEntry(r.list(bob), ab)
		return b != nil && b.GetReadConversationSeq() == 8 && b.GetUnreadCount() == 0 && b.GetUnreadExact() &&
			len(b.GetHead().GetClientMessageId()) == 16 && b.GetPeerUserId() == uint64(alice)
	})
	// carol's own row comes from her dispatch record, which may sit on another partition than
	// alice's and be projected later: wait for the row, then judge it.
	var cl []*qimv1.SessionEntry
	eventually(t, 20*time.Second, "carol's row", func() bool {
		cl = r.list(carol)
		return len(cl) > 0
	})
	if len(cl) != 1 || cl[0].GetUnreadCount() != 0 || cl[0].GetReadConversationSeq() != 1 {
		t.Fatalf("carol's own message counts as unread: %v", cl)
	}
}

func b16(c contract.ConversationID) []byte {
	b := c.Bytes()
	return b[:]
}

// Beyond the exact window unread saturates at 200 with unread_exact=false; a MARK_READ that
// brings latest − read back to the window makes it exact again, and MARK_READ only moves forward.
func TestUnreadWindowAndMarkReadForwardOnly(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	alice, bob, mallory := e.user(), e.user(), e.user()
	ab := e.conv(alice, bob)
	ms := make([]msg, contract.UnreadExactWindow+1)
	for i := range ms {
		ms[i] = msg{from: bob, to: alice}
	}
	e.send(ms...)
	var row *qimv1.SessionEntry
	eventually(t, 30*time.Second, "201 messages projected", func() bool {
		row = findEntry(r.list(alice), ab)
		return row != nil && row.GetLatestConversationSeq() == 201
	})
	if row.GetUnreadCount() != contract.UnreadExactWindow || row.GetUnreadExact() {
		t.Fatalf("201 unread: got %d exact %v, want saturated 200 / false", row.GetUnreadCount(), row.GetUnreadExact())
	}
	steps := []struct {
		name           string
		ask, read      uint64
		unread         uint32
		exact          bool
		listUnreadRead uint64
	}{
		{"back inside the window", 1, 1, 200, true, 1},
		{"forward", 150, 150, 51, true, 150},
		{"stale request never moves back", 3, 150, 51, true, 150},
		{"clamped to the latest seq", 1 << 40, 201, 0, true, 201},
	}
	for _, s := range steps {
		out := r.markRead(alice, ab, s.ask)
		ack := out.GetAck()
		if out.GetErrorCode() != 0 || ack.GetReadConversationSeq() != s.read || ack.GetUnreadCount() != s.unread ||
			ack.GetUnreadExact() != s.exact || !bytes.Equal(ack.GetConversationId(), b16(ab)) {
			t.Fatalf("%s: MarkRead(%d) = %v, want read %d unread %d exact %v", s.name, s.ask, out, s.read, s.unread, s.exact)
		}
		// The snapshot was marked: the very next first page shows the new watermark (any device),
		// and the entry the answer carries for the other devices (SESSION_DELTA) is that row.
		got := findEntry(r.list(alice), ab)
		if got.GetReadConversationSeq() != s.listUnreadRead || got.GetUnreadCount() != s.unread {
			t.Fatalf("%s: list after MarkRead shows read %d unread %d", s.name, got.GetReadConversationSeq(), got.GetUnreadCount())
		}
		if !proto.Equal(out.GetEntry(), got) {
			t.Fatalf("%s: MarkRead's entry for the other devices\n%v\ndiffers from the list's row\n%v", s.name, out.GetEntry(), got)
		}
	}
	if out := r.markRead(mallory, ab, 5); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeNotMember {
		t.Fatalf("a stranger's MarkRead = %v, want NOT_MEMBER", out)
	}
	if out := r.markRead(alice, contract.ConversationID{}, 5); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeInvalidArgument {
		t.Fatalf("zero conversation id = %v, want INVALID_ARGUMENT", out)
	}
	// History the projection has not seen yet: a participant may already mark it read.
	dave := e.user()
	seq := e.send(msg{from: dave, to: alice, noDispatch: true})[0]
	out := r.markRead(alice, e.conv(alice, dave), seq)
	if out.GetAck().GetReadConversationSeq() != seq {
		t.Fatalf("MarkRead ahead of the projection = %v", out)
	}
	// Its entry for the other devices is whole all the same: the activity of the newest record.
	en := out.GetEntry()
	if en == nil || en.GetReadConversationSeq() != seq || en.GetLatestConversationSeq() != seq || en.GetUnreadCount() != 0 ||
		en.GetPeerUserId() != uint64(dave) || len(en.GetLastActivityId()) != 16 || en.GetHead() == nil {
		t.Fatalf("entry of a conversation the projection has not listed = %v", en)
	}
}
