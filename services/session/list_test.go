package session

import (
	"strconv"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

// hrecKey is the writer's history record key (msgstore's documented layout), for corrupting one.
func (e *env) hrecKey(conv contract.ConversationID, seq uint64) string {
	return "qim:hrec:" + contract.ConversationCommitBucket(e.tenant, conv).KeyTag() + ":" + contract.U128(e.tenant).String() +
		":" + contract.U128(conv).String() + ":" + strconv.FormatUint(seq, 10)
}

// A refresh that meets a corrupt or missing history record fails the whole page (INTERNAL);
// it never returns the other rows, or the row with a made-up unread count. Once the record is
// back, the same request succeeds with the new state.
func TestSnapshotRefreshNeverReturnsAPartialPage(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	alice, bob, carol := e.user(), e.user(), e.user()
	e.send(msg{from: bob, to: alice}, msg{from: carol, to: alice}, msg{from: bob, to: alice})
	eventually(t, 20*time.Second, "both conversations", func() bool {
		l := r.list(alice)
		return len(l) == 2 && findEntry(l, e.conv(alice, bob)).GetLatestConversationSeq() == 2
	})
	ab := e.conv(alice, bob)
	key := e.hrecKey(ab, 2)
	good, err := e.rdb.Get(e.ctx, key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for name, corrupt := range map[string]func() error{
		"missing": func() error { return e.rdb.Del(e.ctx, key).Err() },
		"corrupt": func() error { return e.rdb.Set(e.ctx, key, "\xff\xfe not a record", 0).Err() },
	} {
		if err := corrupt(); err != nil {
			t.Fatal(err)
		}
		// MARK_READ marks the row dirty, then answers from the same broken history: INTERNAL.
		if out := r.markRead(alice, ab, 1); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeInternal {
			t.Fatalf("%s: MarkRead = %v, want INTERNAL", name, out)
		}
		out := r.page(alice, nil, 10)
		if contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeInternal || out.GetBatch() != nil {
			t.Fatalf("%s: page with a broken record = %v, want INTERNAL and no batch", name, out)
		}
		if err := e.rdb.Set(e.ctx, key, good, 0).Err(); err != nil {
			t.Fatal(err)
		}
		l := r.list(alice)
		if row := findEntry(l, ab); len(l) != 2 || row.GetReadConversationSeq() != 1 || row.GetUnreadCount() != 1 {
			t.Fatalf("%s: after repair: %d rows, alice/bob read %d unread %d", name, len(l), row.GetReadConversationSeq(), row.GetUnreadCount())
		}
	}
}

// Pages follow the token without gaps or repeats; a token this server never issued and an
// oversized limit are handled as the proto says.
func TestPaging(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	alice := e.user()
	const n = 7
	peers := make([]contract.UserID, n)
	for i := range peers {
		peers[i] = e.user()
		e.send(msg{from: peers[i], to: alice})
	}
	eventually(t, 20*time.Second, "all conversations", func() bool { return len(r.list(alice)) == n })
	seen := map[string]bool{}
	var token []byte
	pages := 0
	for {
		out := r.page(alice, token, 3)
		if out.GetErrorCode() != 0 {
			t.Fatalf("page %d: %v", pages, out)
		}
		b := out.GetBatch()
		for i, s := range b.GetSessions() {
			if seen[string(s.GetConversationId())] {
				t.Fatalf("conversation repeated on page %d", pages)
			}
			seen[string(s.GetConversationId())] = true
			if i > 0 && string(b.GetSessions()[i-1].GetLastActivityId()) < string(s.GetLastActivityId()) {
				t.Fatal("rows not in decreasing last_activity_id order")
			}
		}
		pages++
		if !b.GetHasMore() {
			if len(b.GetNextPageToken()) != 0 {
				t.Fatal("next_page_token set on the last page")
			}
			break
		}
		token = b.GetNextPageToken()
	}
	if len(seen) != n || pages != 3 {
		t.Fatalf("%d conversations on %d pages, want %d on 3", len(seen), pages, n)
	}
	if out := r.page(alice, []byte("not-a-token"), 3); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeInvalidArgument {
		t.Fatalf("foreign token = %v, want INVALID_ARGUMENT", out)
	}
	if out := r.page(alice, nil, 1000); len(out.GetBatch().GetSessions()) != n {
		t.Fatalf("limit 1000 = %v", out)
	}
	if out := r.page(0, nil, 3); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeUnauthorized {
		t.Fatalf("no user = %v, want UNAUTHORIZED", out)
	}
}
