package session

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// group is one group conversation of a test, created and changed through msgstore exactly as
// the writer does (ChangeMembership: the CONTROL commit, the intervals and the version in one
// script), so the intervals the session reads are the ones the real scripts write.
type group struct {
	e       *env
	conv    contract.ConversationID
	version uint64
}

// memberKey is msgstore's interval hash of a group (groupkeys.go: qim:grpmem:{tag}:<tenant>:<cid>,
// the tag of the conversation's commit bucket, ids in 32 lowercase hex digits), for corrupting a
// field.
func (e *env) memberKey(conv contract.ConversationID) string {
	return "qim:grpmem:" + contract.ConversationCommitBucket(e.tenant, conv).KeyTag() + ":" + contract.U128(e.tenant).String() +
		":" + contract.U128(conv).String()
}

// newGroup creates a group of owner and members (CONTROL CREATE at seq 1).
func (e *env) newGroup(owner contract.UserID, members ...contract.UserID) *group {
	e.t.Helper()
	crid, _ := contract.U128FromBytes(randBytes(e.t, 16))
	g := &group{e: e, conv: contract.DeriveGroupID(e.tenant, owner, crid)}
	g.change(contract.MembershipCreate, owner, append([]contract.UserID{owner}, members...)...)
	return g
}

// change commits one membership change by actor and dispatches its CONTROL message to the
// members whose interval holds its seq (the changed users included). It returns the seq.
func (g *group) change(op contract.MembershipOp, actor contract.UserID, users ...contract.UserID) uint64 {
	e := g.e
	e.t.Helper()
	in, rec := e.intent(msg{from: actor, typ: contract.MessageControl, group: g.conv})
	ch := msgstore.GroupChange{Intent: in, Op: op, Expect: g.version, Users: users}
	if op == contract.MembershipCreate {
		ch.Owner, ch.Name, ch.CreateIdent = actor, "g", "crq"
	}
	c, err := e.hist.ChangeMembership(e.ctx, ch)
	if err != nil {
		e.t.Fatalf("%s: %v", op, err)
	}
	g.version++
	rec.ConversationSeq = uint64(c.Seq)
	e.produce(e.dispatches(rec, g.audience(nil)(rec.ConversationSeq)))
	return rec.ConversationSeq
}

// audience is the recipients of the message at seq: the members whose interval holds it, as
// stored (an interval never changes for a committed seq), plus extra — users the fanout would
// never name, for the test of a row without intervals.
func (g *group) audience(extra []contract.UserID) func(seq uint64) []uint64 {
	return func(seq uint64) []uint64 {
		st, ok, err := g.e.hist.LoadGroup(g.e.ctx, g.e.tenant, g.conv)
		if err != nil || !ok {
			g.e.t.Fatalf("LoadGroup: %v %v", ok, err)
		}
		var out []uint64
		for _, u := range append(st.MembersAt(seq), extra...) {
			out = append(out, uint64(u))
		}
		slices.Sort(out)
		return out
	}
}

// send commits group messages (the sender must be a current member: msgstore checks it).
func (g *group) send(extra []contract.UserID, ms ...msg) []uint64 {
	for i := range ms {
		ms[i].group, ms[i].audience = g.conv, g.audience(extra)
	}
	return g.e.send(ms...)
}

// waitListed waits until the projection put conv into u's list (in Redis).
func (r *running) waitListed(u contract.UserID, conv contract.ConversationID) {
	r.t.Helper()
	eventually(r.t, 20*time.Second, "the projection to list the conversation", func() bool {
		in, err := r.svc.st.inList(r.e.ctx, r.e.key(u), conv)
		return err == nil && in
	})
}

func healthz(t *testing.T, r *running) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + r.svc.MetricsAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantRow is what one user's group row must show.
type wantRow struct {
	who                  string
	user                 contract.UserID
	read, latest, unread uint64
	head                 uint64
}

// checkRow reports every difference without stopping, so one run shows each user's clipping.
func checkRow(t *testing.T, r *running, g *group, w wantRow) {
	t.Helper()
	r.waitListed(w.user, g.conv)
	row := findEntry(r.list(w.user), g.conv)
	if row == nil {
		t.Fatalf("%s: no group row", w.who)
	}
	if row.GetReadConversationSeq() != w.read || row.GetLatestConversationSeq() != w.latest ||
		uint64(row.GetUnreadCount()) != w.unread || !row.GetUnreadExact() || row.GetHead().GetConversationSeq() != w.head {
		t.Errorf("%s: read %d latest %d unread %d exact %v head %d, want read %d latest %d unread %d exact head %d", w.who,
			row.GetReadConversationSeq(), row.GetLatestConversationSeq(), row.GetUnreadCount(), row.GetUnreadExact(),
			row.GetHead().GetConversationSeq(), w.read, w.latest, w.unread, w.head)
	}
	if row.GetConversationKind() != uint32(contract.KindGroup) || string(row.GetGroupId()) != string(b16(g.conv)) {
		t.Errorf("%s: kind %d group_id %x, want 2 and the conversation id", w.who, row.GetConversationKind(), row.GetGroupId())
	}
}

// Group rows are clipped to each user's membership intervals: a current member sees the whole
// conversation, a member added at 4 nothing before it, a member removed at 6 nothing after it
// (not even a larger latest seq), a member removed at 3 and added again at 7 nothing in the gap.
func TestGroupRowsClippedToIntervals(t *testing.T) {
	e := newEnv(t, 4)
	r := e.mustRun(nil)
	owner, member, joiner, leaver, readded := e.user(), e.user(), e.user(), e.user(), e.user()
	g := e.newGroup(owner, member, leaver, readded) // 1 CREATE
	seqs := []uint64{1}
	seqs = append(seqs, g.send(nil, msg{from: owner})...)                    // 2
	seqs = append(seqs, g.change(contract.MembershipRemove, owner, readded)) // 3: readded 0:3
	seqs = append(seqs, g.change(contract.MembershipAdd, owner, joiner))     // 4: joiner 3:
	seqs = append(seqs, g.send(nil, msg{from: owner})...)                    // 5
	seqs = append(seqs, g.change(contract.MembershipRemove, owner, leaver))  // 6: leaver 0:6
	seqs = append(seqs, g.change(contract.MembershipAdd, owner, readded))    // 7: readded 0:3,6:
	seqs = append(seqs, g.send(nil, msg{from: owner}, msg{from: owner})...)  // 8, 9
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("seqs = %v", seqs)
	}
	for _, w := range []wantRow{
		{who: "member from creation", user: member, latest: 9, unread: 4, head: 9},      // 2 5 8 9
		{who: "added at 4", user: joiner, latest: 9, unread: 3, head: 9},                // 5 8 9
		{who: "removed at 6", user: leaver, latest: 6, unread: 2, head: 5},              // 2 5
		{who: "removed at 3, added at 7", user: readded, latest: 9, unread: 3, head: 9}, // 2 8 9
	} {
		checkRow(t, r, g, w)
	}
	eventually(t, 20*time.Second, "the owner's watermark (sending marks it read)", func() bool {
		row := findEntry(r.list(owner), g.conv)
		return row != nil && row.GetReadConversationSeq() == 9 && row.GetUnreadCount() == 0
	})

	// A former member cannot mark past its leave; one never a member cannot mark at all.
	if ack := r.markRead(leaver, g.conv, 9).GetAck(); ack.GetReadConversationSeq() != 6 || ack.GetUnreadCount() != 0 || !ack.GetUnreadExact() {
		t.Fatalf("leaver's MarkRead(9) = %v, want read 6 (its leave), unread 0", ack)
	}
	checkRow(t, r, g, wantRow{who: "removed at 6, after MarkRead", user: leaver, read: 6, latest: 6, unread: 0, head: 5})
	if ack := r.markRead(joiner, g.conv, 5).GetAck(); ack.GetReadConversationSeq() != 5 || ack.GetUnreadCount() != 2 {
		t.Fatalf("joiner's MarkRead(5) = %v, want read 5, unread 2", ack)
	}
	stranger := e.user()
	if out := r.markRead(stranger, g.conv, 1); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeNotMember {
		t.Fatalf("a never-member's MarkRead = %v, want NOT_MEMBER", out)
	}
}

// A member who joined after more than the exact window of traffic gets an exact count of what it
// can see, not "200+" of history it never could.
func TestGroupLateJoinerUnreadIsExact(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	owner, late := e.user(), e.user()
	g := e.newGroup(owner) // 1
	const before = contract.UnreadExactWindow + 50
	old := make([]msg, before)
	for i := range old {
		old[i] = msg{from: owner, noDispatch: true} // 2..251: history the late member never sees
	}
	g.send(nil, old...)
	add := g.change(contract.MembershipAdd, owner, late) // 252: late 251:
	g.send(nil, msg{from: owner}, msg{from: owner}, msg{from: owner})
	checkRow(t, r, g, wantRow{who: "added at 252", user: late, latest: add + 3, unread: 3, head: add + 3})
}

// Interval data that does not parse fails the whole page (never the other rows alone); a group
// row of a user who has no interval at all is never shown, is counted, and turns /healthz 503.
func TestGroupIntervalsCorruptOrMissing(t *testing.T) {
	e := newEnv(t, 2)
	r := e.mustRun(nil)
	owner, member, never := e.user(), e.user(), e.user()
	g := e.newGroup(owner, member)
	e.send(msg{from: owner, to: member})
	g.send([]contract.UserID{never}, msg{from: owner})
	r.waitListed(member, g.conv)
	r.waitListed(member, e.conv(owner, member))
	field := strconv.FormatUint(uint64(member), 10)
	if err := e.rdb.HSet(e.ctx, e.memberKey(g.conv), field, "garbage").Err(); err != nil {
		t.Fatal(err)
	}
	if out := r.page(member, nil, 10); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeInternal || out.GetBatch() != nil {
		t.Fatalf("page with corrupt intervals = %v, want INTERNAL and no batch", out)
	}
	if out := r.markRead(member, g.conv, 1); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeInternal {
		t.Fatalf("MarkRead with corrupt intervals = %v, want INTERNAL", out)
	}
	if err := e.rdb.HSet(e.ctx, e.memberKey(g.conv), field, "0:").Err(); err != nil {
		t.Fatal(err)
	}
	if l := r.list(member); len(l) != 2 || findEntry(l, g.conv).GetUnreadCount() != 1 {
		t.Fatalf("after repair: %v", l)
	}

	if code, body := healthz(t, r); code != http.StatusOK {
		t.Fatalf("healthz before = %d %q", code, body)
	}
	r.waitListed(never, g.conv)
	if l := r.list(never); len(l) != 0 {
		t.Fatalf("a never-member's list shows %v, want the group row hidden", l)
	}
	if n := testutil.ToFloat64(r.svc.m.groupIntervalMissing); n != 1 {
		t.Fatalf("%s = %v, want 1", contract.InvariantSessionGroupIntervalMissing, n)
	}
	if code, body := healthz(t, r); code != http.StatusServiceUnavailable || !strings.Contains(body, contract.InvariantSessionGroupIntervalMissing) {
		t.Fatalf("healthz after a hidden row = %d %q, want 503 naming the counter", code, body)
	}
	if out := r.markRead(never, g.conv, 1); contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeNotMember {
		t.Fatalf("MarkRead of a listed never-member = %v, want NOT_MEMBER", out)
	}
}
