package store

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// groupMsg builds a message of group conv at seq n.
func groupMsg(conv contract.ConversationID, n uint64, sender contract.UserID, typ contract.MessageType) Message {
	m := msg(n, sender)
	m.Conversation, m.Type = conv, typ
	if typ == contract.MessageControl {
		m.CustomType = contract.MembershipCustomType
	}
	return m
}

// A create is durable before it is sent: its request id and group id survive a reopen, the id
// comes from the ordinal range shared with sends (never reused), and the group is listed at once.
func TestGroupCreateIsDurableAndListed(t *testing.T) {
	id := testIdentity()
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(ctx, path, id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.AddPending(ctx, NewPending{NowMs: 1, Peer: peer, Type: contract.MessageText, Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.AddGroupCreate(ctx, NewGroupCreate{Name: "g", Members: []contract.UserID{12, peer, self, 12}, NowMs: 5})
	if err != nil {
		t.Fatal(err)
	}
	if g.Ordinal == p.Ordinal || g.ClientRequestID == contract.U128(p.ClientMessageID) {
		t.Fatalf("create reused the send's ordinal %d", p.Ordinal)
	}
	if want := contract.DeriveGroupID(id.Tenant, self, g.ClientRequestID); g.Group != want || g.Group.Kind() != contract.KindGroup {
		t.Fatalf("group %s, want DeriveGroupID %s", g.Group, want)
	}
	if !slices.Equal(g.Members, []contract.UserID{peer, 12}) {
		t.Fatalf("members %v, want [9 12] (sorted, no duplicates, no self)", g.Members)
	}
	_ = s.Close()
	if s, err = Open(ctx, path, id); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	queued, err := s.QueuedGroupCreates(ctx, 10)
	if err != nil || len(queued) != 1 || queued[0].ClientRequestID != g.ClientRequestID || queued[0].Group != g.Group ||
		queued[0].Name != "g" || !slices.Equal(queued[0].Members, g.Members) {
		t.Fatalf("after reopen: %+v %v, want %+v", queued, err, g)
	}
	convs, _ := s.Conversations(ctx)
	i := slices.IndexFunc(convs, func(c Conversation) bool { return c.ID == g.Group })
	if i < 0 || convs[i].Kind != contract.KindGroup || convs[i].Group != g.Group || convs[i].Peer != 0 {
		t.Fatalf("group not listed as a GROUP conversation: %+v", convs)
	}
}

func TestGroupCreateResolveAndFail(t *testing.T) {
	s := openTest(t, testIdentity())
	a, _ := s.AddGroupCreate(ctx, NewGroupCreate{Name: "a"})
	b, _ := s.AddGroupCreate(ctx, NewGroupCreate{Name: "b"})
	if ok, err := s.ResolveGroupCreate(ctx, a.ClientRequestID); !ok || err != nil {
		t.Fatalf("resolve = %v, %v", ok, err)
	}
	if ok, _ := s.ResolveGroupCreate(ctx, a.ClientRequestID); ok {
		t.Fatal("a second GROUP_CREATED resolved something")
	}
	if ok, err := s.FailGroupCreate(ctx, b.ClientRequestID, contract.ErrCodeGroupFull, "full"); !ok || err != nil {
		t.Fatalf("fail = %v, %v", ok, err)
	}
	if ok, _ := s.FailGroupCreate(ctx, b.ClientRequestID, contract.ErrCodeGroupFull, "full"); ok {
		t.Fatal("failed twice")
	}
	if q, _ := s.QueuedGroupCreates(ctx, 10); len(q) != 0 {
		t.Fatalf("queued after resolve and fail: %+v", q)
	}
	all, _ := s.GroupCreates(ctx)
	if len(all) != 1 || all[0].Name != "b" || all[0].State != PendingFailed || all[0].ErrorCode != contract.ErrCodeGroupFull {
		t.Fatalf("all = %+v, want b failed GROUP_FULL", all)
	}
	if _, err := s.AddGroupCreate(ctx, NewGroupCreate{Name: "z", Members: []contract.UserID{0}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero member: %v, want ErrInvalid", err)
	}
}

func TestGroupPendingTarget(t *testing.T) {
	s := openTest(t, testIdentity())
	group := contract.DeriveGroupID(contract.TenantID{}, self, contract.U128{Lo: 1})
	p, err := s.AddPending(ctx, NewPending{NowMs: 1, Group: group, Type: contract.MessageText, Body: []byte("hi")})
	if err != nil || p.Conversation != group || p.Peer != 0 {
		t.Fatalf("group send: %+v %v", p, err)
	}
	for name, np := range map[string]NewPending{
		"both":   {Peer: peer, Group: group, NowMs: 1},
		"none":   {NowMs: 1},
		"direct": {Group: directConv(), NowMs: 1},
	} {
		if _, err := s.AddPending(ctx, np); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// CONTROL messages move latest_seq but never head the row nor count as unread: a group with only
// its CREATE has no head, and a later "bob joined" keeps the last real message as the head.
func TestControlNeverHeadsNorCounts(t *testing.T) {
	s := openTest(t, testIdentity())
	group := contract.DeriveGroupID(contract.TenantID{}, peer, contract.U128{Lo: 7})
	steps := []struct {
		msgs       []Message
		wantLatest contract.ConversationSeq
		wantHead   contract.MessageID
		wantUnread uint32
	}{
		{[]Message{groupMsg(group, 1, peer, contract.MessageControl)}, 1, contract.MessageID{}, 0},
		{[]Message{groupMsg(group, 2, peer, contract.MessageText), groupMsg(group, 3, peer, contract.MessageControl)}, 3, mid(2), 1},
		{[]Message{groupMsg(group, 4, 12, contract.MessageControl)}, 4, mid(2), 1},
		{[]Message{groupMsg(group, 5, 12, contract.MessageText)}, 5, mid(5), 2},
	}
	for i, st := range steps {
		a, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: st.msgs})
		if err != nil {
			t.Fatal(err)
		}
		c := a.Conversations[0]
		if c.LatestSeq != st.wantLatest || c.LatestMessageID != st.wantHead || c.Unread != st.wantUnread ||
			c.Kind != contract.KindGroup || c.Group != group {
			t.Fatalf("step %d: %+v, want latest %d head %s unread %d", i, c, st.wantLatest, st.wantHead, st.wantUnread)
		}
	}
	// An older real message from history does not take the head back.
	old := groupMsg(group, 1, peer, contract.MessageText)
	old.Seq, old.ID = 0, mid(100)
	if _, err := s.Apply(ctx, Batch{Source: SourceHistory, Messages: []Message{old}}); err != nil {
		t.Fatal(err)
	}
	if convs, _ := s.Conversations(ctx); convs[0].LatestMessageID != mid(5) || convs[0].LatestSeq != 5 {
		t.Fatalf("after an older page: %+v", convs[0])
	}
}

// A version-2 store gains head_seq = latest_seq (every head it has is its latest message) and
// the group_creates table, and keeps its data.
func TestMigrateVersion2(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(ctx, path, testIdentity())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: []Message{msg(1, peer), msg(2, peer)}}); err != nil {
		t.Fatal(err)
	}
	downgrade(t, s, 2)
	_ = s.Close()
	if s, err = Open(ctx, path, testIdentity()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var head sql.NullInt64
	_ = s.db.QueryRowContext(ctx, "SELECT head_seq FROM conversations").Scan(&head)
	if head.Int64 != 2 {
		t.Fatalf("head_seq %v after migration, want 2", head)
	}
	// The migrated head compares with head_seq: a newer message takes it.
	a, err := s.Apply(ctx, Batch{Source: SourceHistory, Messages: []Message{msg(3, peer)}})
	if err != nil || a.Conversations[0].LatestMessageID != mid(3) {
		t.Fatalf("after migration: %+v %v", a.Conversations, err)
	}
	if _, err := s.AddGroupCreate(ctx, NewGroupCreate{Name: "g"}); err != nil {
		t.Fatalf("group_creates after migration: %v", err)
	}
}
