package mailboxstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// The zero cursor includes log offset 0: the first record of every dispatch partition. (An
// exclusive lower bound at zero once hid it from every offline pull.)
func TestPullZeroCursorIncludesOffsetZero(t *testing.T) {
	f := newFix(t)
	a := f.user()
	f.apply(f.mat(newDispatchID(t), 1, 0, testDay, a))
	r := f.pull(a, 0, 100, 1<<20)
	if got := seqs(r); !slices.Equal(got, []contract.MailboxSeq{seqOf(t, 1, 0)}) || r.HasMore || r.Expired {
		t.Fatalf("zero cursor: %v more=%v expired=%v", got, r.HasMore, r.Expired)
	}
	if r.Next != seqOf(t, 1, 0) {
		t.Fatalf("next cursor %d", r.Next)
	}
	if again := f.pull(a, r.Next, 100, 1<<20); len(again.Entries) != 0 || again.Next != r.Next {
		t.Fatalf("pull with the returned cursor: %v next %d", seqs(again), again.Next)
	}
}

// Batches end on mailbox_seq boundaries: an event group (several entries of one user at one seq)
// is never split by the limit or the byte budget, and the first group always fits.
func TestPullWholeEventGroups(t *testing.T) {
	f := newFix(t)
	a := f.user()
	for o := int64(0); o < 10; o++ {
		m := f.mat(newDispatchID(t), 1, o, testDay, a)
		seq, _ := m.Seq()
		second := m.Entries[0]
		second.EventType = 2
		second.Value = entryBytes(t, seq, m.DispatchID, a, 2)
		m.Entries = append(m.Entries, second)
		f.apply(m)
	}
	for _, tc := range []struct {
		limit, maxBytes, groups int
		more                    bool
	}{{1, 1 << 20, 1, true}, {3, 1 << 20, 2, true}, {100, 1, 1, true}, {100, 1 << 20, 10, false}} {
		r := f.pull(a, 0, tc.limit, tc.maxBytes)
		if len(r.Entries) != 2*tc.groups || r.HasMore != tc.more {
			t.Fatalf("limit %d bytes %d: %d entries more=%v, want %d groups more=%v",
				tc.limit, tc.maxBytes, len(r.Entries), r.HasMore, tc.groups, tc.more)
		}
		for i := 0; i < len(r.Entries); i += 2 {
			if r.Entries[i].Seq != r.Entries[i+1].Seq || r.Entries[i].EventType != 1 || r.Entries[i+1].EventType != 2 {
				t.Fatalf("group %d split or out of order: %+v", i/2, r.Entries[i:i+2])
			}
		}
		if r.Next != r.Entries[len(r.Entries)-1].Seq {
			t.Fatalf("next %d is not the last group's seq", r.Next)
		}
	}
	// Paging with limit 1 walks every group exactly once.
	var walked []contract.MailboxSeq
	for c, more := contract.MailboxSeq(0), true; more; {
		r := f.pull(a, c, 1, 1<<20)
		walked = append(walked, seqs(r)...)
		c, more = r.Next, r.HasMore
	}
	if len(walked) != 20 || !slices.IsSorted(walked) {
		t.Fatalf("paging walked %v", walked)
	}
}

// Day buckets follow created_at_ms, not log order: a later record of an earlier day still comes
// out in mailbox_seq order, also when the pages are smaller than a bucket.
func TestPullMergesDaysInSeqOrder(t *testing.T) {
	f := newFix(t)
	a := f.user()
	days := []int64{testDay + 1, testDay, testDay + 1, testDay, testDay + 2, testDay}
	var want []contract.MailboxSeq
	for o, d := range days {
		want = append(want, f.apply(f.mat(newDispatchID(t), 1, int64(o), d, a))[0].Seq)
	}
	if got := seqs(f.pull(a, 0, 100, 1<<20)); !slices.Equal(got, want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
	var walked []contract.MailboxSeq
	for c, more := contract.MailboxSeq(0), true; more; {
		r := f.pull(a, c, 1, 1<<20)
		walked = append(walked, seqs(r)...)
		c, more = r.Next, r.HasMore
	}
	if !slices.Equal(walked, want) {
		t.Fatalf("paged %v, want %v", walked, want)
	}
}

// Nothing above compose(epoch, watermark) is visible, even if it is stored.
func TestPullStopsAtWatermark(t *testing.T) {
	f := newFix(t)
	a := f.user()
	f.apply(f.mat(newDispatchID(t), 1, 0, testDay, a))
	ahead := f.mat(newDispatchID(t), 1, 1, testDay, a) // stored behind the script's back
	uk := newUserKeys(f.shard, f.tenant, a)
	member := append(appendSeq(nil, seqOf(t, 1, 1)), 0, 0, 0, 1)
	member = append(member, ahead.Entries[0].Value...)
	if err := f.rdb.ZAdd(f.ctx, uk.bucketKey(testDay), redisZ(member)).Err(); err != nil {
		t.Fatal(err)
	}
	if got := seqs(f.pull(a, 0, 100, 1<<20)); !slices.Equal(got, []contract.MailboxSeq{seqOf(t, 1, 0)}) {
		t.Fatalf("entries above the watermark visible: %v", got)
	}
}

// A cursor behind the user's trim mark is CURSOR_EXPIRED with the cursor to resume from, whether
// the trim was explicit (TrimBefore) or the bucket expired (simulated by deleting it, which is
// what EXPIREAT does); a cursor at or past the mark keeps working, and the zero cursor never
// expires (it asks for whatever is retained).
func TestPullCursorExpired(t *testing.T) {
	f := newFix(t)
	a := f.user()
	s0 := f.apply(f.mat(newDispatchID(t), 1, 0, testDay, a))[0].Seq
	s1 := f.apply(f.mat(newDispatchID(t), 1, 1, testDay, a))[0].Seq
	s2 := f.apply(f.mat(newDispatchID(t), 1, 2, testDay+1, a))[0].Seq
	s3 := f.apply(f.mat(newDispatchID(t), 1, 3, testDay+2, a))[0].Seq
	mark, err := f.store.TrimBefore(f.ctx, f.tenant, a, testDay+1)
	if err != nil || mark != s1 {
		t.Fatalf("trim mark %d (%v), want %d", mark, err, s1)
	}
	if r := f.pull(a, s0, 100, 1<<20); !r.Expired || r.Next != s1 || len(r.Entries) != 0 {
		t.Fatalf("cursor below the mark: %+v", r)
	}
	if r := f.pull(a, s1, 100, 1<<20); r.Expired || !slices.Equal(seqs(r), []contract.MailboxSeq{s2, s3}) {
		t.Fatalf("cursor at the mark: %+v", r)
	}
	if r := f.pull(a, 0, 100, 1<<20); r.Expired || !slices.Equal(seqs(r), []contract.MailboxSeq{s2, s3}) {
		t.Fatalf("zero cursor after a trim: %+v", r)
	}
	uk := newUserKeys(f.shard, f.tenant, a)
	if err := f.rdb.Del(f.ctx, uk.bucketKey(testDay+1)).Err(); err != nil { // the day expired
		t.Fatal(err)
	}
	if r := f.pull(a, s1, 100, 1<<20); !r.Expired || r.Next != s2 {
		t.Fatalf("cursor below an expired day: %+v", r)
	}
	if r := f.pull(a, s2, 100, 1<<20); r.Expired || !slices.Equal(seqs(r), []contract.MailboxSeq{s3}) {
		t.Fatalf("resumed cursor: %+v", r)
	}
}

// When everything of a user expired, index included, a non-zero cursor cannot be vouched for:
// it is expired once, resumes at the shard head, and is accepted from then on (no REBUILD loop).
func TestPullExpiredWithoutIndexDoesNotLoop(t *testing.T) {
	f := newFix(t)
	a, b := f.user(), f.user()
	f.apply(f.mat(newDispatchID(t), 1, 0, testDay, a), f.mat(newDispatchID(t), 1, 1, testDay, a))
	head := seqOf(t, 1, 1)
	r := f.pull(b, seqOf(t, 1, 0), 100, 1<<20)
	if !r.Expired || r.Next != head {
		t.Fatalf("no index, non-zero cursor: %+v", r)
	}
	if r := f.pull(b, r.Next, 100, 1<<20); r.Expired || len(r.Entries) != 0 {
		t.Fatalf("resumed cursor expired again: %+v", r)
	}
	s2 := f.apply(f.mat(newDispatchID(t), 1, 2, testDay, b))[0].Seq
	if r := f.pull(b, head, 100, 1<<20); r.Expired || !slices.Equal(seqs(r), []contract.MailboxSeq{s2}) {
		t.Fatalf("new entry after the resume: %+v", r)
	}
}

// The device cursor only moves forward, and only when the pull asks to store it.
func TestDeviceCursorForwardOnly(t *testing.T) {
	f := newFix(t)
	a := f.user()
	for o := int64(0); o < 4; o++ {
		f.apply(f.mat(newDispatchID(t), 1, o, testDay, a))
	}
	check := func(want contract.MailboxSeq) {
		t.Helper()
		got, ok, err := f.store.DeviceCursor(f.ctx, f.tenant, a, "dev")
		if err != nil || !ok || got != want {
			t.Fatalf("device cursor %d (%v, %v), want %d", got, ok, err, want)
		}
	}
	f.pull(a, seqOf(t, 1, 2), 10, 1<<20)
	check(seqOf(t, 1, 2))
	f.pull(a, seqOf(t, 1, 1), 10, 1<<20)
	check(seqOf(t, 1, 2))
	if _, err := f.store.Pull(f.ctx, PullQuery{Tenant: f.tenant, User: a, Device: "dev", Cursor: seqOf(t, 1, 3),
		Limit: 1, MaxBytes: 1}); err != nil {
		t.Fatal(err)
	}
	check(seqOf(t, 1, 2))
	f.pull(a, seqOf(t, 1, 3), 10, 1<<20)
	check(seqOf(t, 1, 3))
}

// PullMany answers each query exactly as Pull would, in query order, stores each device's cursor,
// and an invalid query fails alone.
func TestPullManyIsPullPerQuery(t *testing.T) {
	f := newFix(t)
	a, b := f.user(), f.user()
	for o := int64(0); o < 3; o++ {
		f.apply(f.mat(newDispatchID(t), 1, o, testDay, a))
	}
	f.apply(f.mat(newDispatchID(t), 1, 3, testDay, b))
	qs := []PullQuery{
		{Tenant: f.tenant, User: a, Device: "dev", Cursor: seqOf(t, 1, 0), Limit: 10, MaxBytes: 1 << 20, StoreCursor: true},
		{Tenant: f.tenant, User: b, Device: "dev", Limit: 0, MaxBytes: 1 << 20, StoreCursor: true}, // invalid limit
		{Tenant: f.tenant, User: b, Device: "dev", Cursor: 0, Limit: 10, MaxBytes: 1 << 20, StoreCursor: true},
		{Tenant: f.tenant, User: a, Device: "other", Cursor: 0, Limit: 1, MaxBytes: 1 << 20, StoreCursor: true},
	}
	res, errs, err := f.store.PullMany(f.ctx, qs)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[2] != nil || errs[3] != nil || !errors.Is(errs[1], ErrInvalid) {
		t.Fatalf("per-query errors %v", errs)
	}
	if got := seqs(res[0]); !slices.Equal(got, []contract.MailboxSeq{seqOf(t, 1, 1), seqOf(t, 1, 2)}) || res[0].HasMore {
		t.Errorf("a after offset 0: %v more=%v", got, res[0].HasMore)
	}
	if got := seqs(res[2]); !slices.Equal(got, []contract.MailboxSeq{seqOf(t, 1, 3)}) {
		t.Errorf("b from zero: %v", got)
	}
	if got := seqs(res[3]); !slices.Equal(got, []contract.MailboxSeq{seqOf(t, 1, 0)}) || !res[3].HasMore {
		t.Errorf("a/other limit 1: %v more=%v", got, res[3].HasMore)
	}
	for _, c := range []struct {
		u    contract.UserID
		dev  string
		want contract.MailboxSeq
	}{{a, "dev", seqOf(t, 1, 0)}, {a, "other", 0}} {
		got, ok, err := f.store.DeviceCursor(f.ctx, f.tenant, c.u, c.dev)
		if err != nil || got != c.want || (c.want != 0 && !ok) {
			t.Errorf("cursor of %d/%s = %d (%v, %v), want %d", c.u, c.dev, got, ok, err, c.want)
		}
	}
	// Every pull of the batch compared with Pull alone (same store state, cursors only move forward).
	for i, q := range qs {
		if errs[i] != nil {
			continue
		}
		q.StoreCursor = false
		one, err := f.store.Pull(f.ctx, q)
		if err != nil || !slices.Equal(seqs(one), seqs(res[i])) || one.Next != res[i].Next || one.HasMore != res[i].HasMore {
			t.Errorf("query %d: Pull %v next %d (%v), PullMany %v next %d", i, seqs(one), one.Next, err, seqs(res[i]), res[i].Next)
		}
	}
}
