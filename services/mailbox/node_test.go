package mailbox

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/dispatch"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// An offline recipient finds the message with a zero cursor, including the very first record of
// a dispatch partition (offset 0); the sender's own copy carries the client_message_id anchor and
// the peer's does not; pulling again with the returned cursor returns nothing new.
func TestOfflinePullIncludesFirstRecordOfPartition(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	sender, peer := e.user(s), e.user(s)
	if e.hasOffline(n, peer, 0) {
		t.Fatal("has_offline_data before anything was sent")
	}
	cmid, ds := e.message(sender, peer, []byte("hello"))
	if offs := e.produce(ds...); len(ds) != 1 || offs[0] != 0 {
		t.Fatalf("premise: one dispatch at offset 0, got %d at %v", len(ds), offs)
	}
	e.waitWatermark(s, 0)
	if !e.hasOffline(n, peer, 0) {
		t.Fatal("has_offline_data false with an entry above the zero cursor")
	}
	b := e.pull(n, peer, "phone", 0)
	if len(b.GetEntries()) != 1 || b.GetEntries()[0].GetMailboxSeq() != uint64(seqAt(t, 0)) {
		t.Fatalf("zero-cursor pull: %v", b)
	}
	ev := b.GetEntries()[0]
	if len(ev.GetClientMessageId()) != 0 || string(ev.GetBody()) != "hello" || ev.GetSenderUserId() != uint64(sender) ||
		!bytes.Equal(ev.GetMessageId(), ds[0].GetMessageId()) || ev.GetSentAtMs() != ds[0].GetCreatedAtMs() {
		t.Fatalf("peer copy: %v", ev)
	}
	own := e.pull(n, sender, "laptop", 0).GetEntries()
	if len(own) != 1 || !bytes.Equal(own[0].GetClientMessageId(), cmid) {
		t.Fatalf("sender copy lacks the anchor: %v", own)
	}
	next := contract.MailboxSeq(b.GetNextCursor().GetMailboxSeq())
	if again := e.pull(n, peer, "phone", next); len(again.GetEntries()) != 0 || again.GetHasMore() ||
		again.GetNextCursor().GetMailboxSeq() != uint64(next) {
		t.Fatalf("pull with the returned cursor: %v", again)
	}
	if e.hasOffline(n, peer, next) {
		t.Fatal("has_offline_data true at the head")
	}
	if c, ok, _ := e.store.DeviceCursor(e.ctx, e.tenant, peer, "phone"); !ok || c != next {
		t.Fatalf("device cursor %d %v, want %d", c, ok, next)
	}
}

// A duplicate dispatch record (a replayed fanout batch: same dispatch, another source offset)
// reuses the first mailbox_seq and yields one entry; the watermark still passes it.
func TestDuplicateDispatchReusesFirstSeq(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	sender, peer := e.user(s), e.user(s)
	_, ds := e.message(sender, peer, []byte("once"))
	replay := proto.Clone(ds[0]).(*internalv1.GroupDispatch)
	replay.SourceOffset = 99
	_, other := e.message(peer, sender, []byte("between"))
	offs := e.produce(ds[0], other[0], replay)
	e.waitWatermark(s, offs[2])
	got := e.pull(n, peer, "d", 0).GetEntries()
	if len(got) != 2 || got[0].GetMailboxSeq() != uint64(seqAt(t, offs[0])) || got[1].GetMailboxSeq() != uint64(seqAt(t, offs[1])) {
		t.Fatalf("entries %v, want seqs of offsets %d and %d only", got, offs[0], offs[1])
	}
	// The watermark is written inside the materialization, the counter just after it returns:
	// wait for the count rather than read it once.
	if v := waitCounter(t, n.svc, "qim_mailbox_dispatches_materialized_total", "duplicate", 1); v != 1 {
		t.Fatalf("duplicates counted %v, want 1", v)
	}
}

// The same dispatch_id with a different payload_digest stops the node with an error naming the
// shard and offset, the invariant counter makes /healthz 503, and the watermark stays before it.
func TestDigestConflictStopsNode(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	sender, peer := e.user(s), e.user(s)
	_, ds := e.message(sender, peer, []byte("original"))
	forged := proto.Clone(ds[0]).(*internalv1.GroupDispatch)
	forged.Body = []byte("different")
	var err error
	if forged.PayloadDigest, err = dispatch.Digest(forged); err != nil {
		t.Fatal(err)
	}
	offs := e.produce(ds[0], forged)
	runErr := n.stopWhenDone(t)
	var se *ShardError
	var ce *mailboxstore.ConflictError
	if !errors.As(runErr, &se) || se.Shard != s || se.Offset != offs[1] || !errors.As(runErr, &ce) {
		t.Fatalf("Run returned %v, want a ShardError with a ConflictError at shard %d offset %d", runErr, s, offs[1])
	}
	if st, _ := e.store.ReadShard(e.ctx, s); st.Watermark != offs[0] {
		t.Fatalf("watermark %d, want %d (before the conflicting record)", st.Watermark, offs[0])
	}
	rec := httptest.NewRecorder()
	obs.NewServer("127.0.0.1:0", n.svc.Registry(), n.svc.ready).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !bytes.Contains(rec.Body.Bytes(), []byte("qim_mailbox_dispatch_conflicts_total")) {
		t.Fatalf("/healthz %d %q", rec.Code, rec.Body.String())
	}
}

// A restarted node (Run again on the same Redis) resumes at watermark + 1: it catches up before
// serving, applies only the new records, and no entry is duplicated.
func TestRestartResumesFromWatermark(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	sender, peer := e.user(s), e.user(s)
	send := func(k int) []int64 {
		var all []int64
		for i := 0; i < k; i++ {
			_, ds := e.message(sender, peer, []byte{byte(i)})
			all = append(all, e.produce(ds...)...)
		}
		return all
	}
	first := e.start(e.config(s))
	offs := send(3)
	e.waitWatermark(s, offs[2])
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	offs = append(offs, send(2)...)
	second := e.start(e.config(s)) // serving means caught up
	if st, _ := e.store.ReadShard(e.ctx, s); st.Watermark != offs[4] {
		t.Fatalf("serving before catch-up: watermark %d, log end %d", st.Watermark, offs[4])
	}
	if v := counterValue(t, second.svc, "qim_mailbox_dispatches_materialized_total", ""); v != 2 {
		t.Fatalf("restart applied %v records, want only the 2 new ones", v)
	}
	got := e.pull(second, peer, "d", 0).GetEntries()
	if len(got) != 5 {
		t.Fatalf("%d entries after restart, want 5", len(got))
	}
	for i, ev := range got {
		if ev.GetMailboxSeq() != uint64(seqAt(t, offs[i])) {
			t.Fatalf("entry %d at seq %d, want offset %d", i, ev.GetMailboxSeq(), offs[i])
		}
	}
}

// The stored device cursor only moves forward; a malformed cursor is INVALID_ARGUMENT; a cursor
// behind a trim is answered with cursor_expired and the cursor to resume from.
func TestPullCursorRules(t *testing.T) {
	e := newEnv(t)
	s := e.claimShard()
	n := e.start(e.config(s))
	sender, peer := e.user(s), e.user(s)
	var offs []int64
	for i := 0; i < 3; i++ {
		_, ds := e.message(sender, peer, nil)
		offs = append(offs, e.produce(ds...)...)
	}
	e.waitWatermark(s, offs[2])
	e.pull(n, peer, "d", seqAt(t, offs[1]))
	e.pull(n, peer, "d", seqAt(t, offs[0]))
	if c, _, _ := e.store.DeviceCursor(e.ctx, e.tenant, peer, "d"); c != seqAt(t, offs[1]) {
		t.Fatalf("device cursor moved back to %d", c)
	}
	bad := e.pullOutcome(n, peer, "d", &qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: 1 << 63}})
	if contract.ErrorCode(bad.GetErrorCode()) != contract.ErrCodeInvalidArgument {
		t.Fatalf("bit-63 cursor: %v", bad)
	}
	if e.pull(n, peer, "d", 0).GetEntries()[0].Body == nil {
		t.Fatal("an empty body was not inlined as present-but-empty") // 2 members × 0 bytes: inline
	}
	mark, err := e.store.TrimBefore(e.ctx, e.tenant, peer, mailboxstore.Day(ds0CreatedAt(t, e, n, peer))+1)
	if err != nil || mark != seqAt(t, offs[2]) {
		t.Fatalf("trim: mark %d, %v", mark, err)
	}
	b := e.pull(n, peer, "d", seqAt(t, offs[0]))
	if !b.GetCursorExpired() || len(b.GetEntries()) != 0 || b.GetNextCursor().GetMailboxSeq() != uint64(mark) {
		t.Fatalf("cursor behind the trim: %v", b)
	}
	if !e.hasOffline(n, peer, seqAt(t, offs[0])) {
		t.Fatal("an expired cursor must report offline data (the device has to REBUILD)")
	}
}

// ds0CreatedAt returns the created_at_ms of the peer's first entry (its day is trimmed).
func ds0CreatedAt(t *testing.T, e *env, n *node, u contract.UserID) int64 {
	t.Helper()
	return e.pull(n, u, "probe", 0).GetEntries()[0].GetSentAtMs()
}
