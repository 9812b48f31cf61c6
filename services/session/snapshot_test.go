package session

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
)

// fakeSource stands in for Redis in the snapshot logic tests (pure logic: the Redis-backed
// source is exercised by the integration tests). state is the "stored" list; hooks run inside a
// read, after it took its values, to play a write that lands while a rebuild or refresh is in
// flight.
type fakeSource struct {
	mu         sync.Mutex
	state      map[contract.ConversationID]uint64
	unread     map[contract.ConversationID]uint32
	failScores error
	failSums   error
	listHook   func()
	scoresHook func()
	sumCalls   map[contract.ConversationID]int
}

func newFakeSource() *fakeSource {
	return &fakeSource{state: map[contract.ConversationID]uint64{}, unread: map[contract.ConversationID]uint32{},
		sumCalls: map[contract.ConversationID]int{}}
}

func (f *fakeSource) write(conv contract.ConversationID, score uint64, unread uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state[conv], f.unread[conv] = score, unread
}

func (f *fakeSource) list(context.Context, userKey) ([]row, error) {
	f.mu.Lock()
	rows := make([]row, 0, len(f.state))
	for c, s := range f.state {
		rows = append(rows, row{score: s, conv: c})
	}
	hook := f.listHook
	f.listHook = nil
	f.mu.Unlock()
	slices.SortFunc(rows, func(a, b row) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	if hook != nil {
		hook()
	}
	return rows, nil
}

func (f *fakeSource) scores(_ context.Context, _ userKey, convs []contract.ConversationID) ([]row, []bool, error) {
	f.mu.Lock()
	if f.failScores != nil {
		f.mu.Unlock()
		return nil, nil, f.failScores
	}
	rows, ok := make([]row, len(convs)), make([]bool, len(convs))
	for i, c := range convs {
		rows[i].score, ok[i] = f.state[c]
		rows[i].conv = c
	}
	hook := f.scoresHook
	f.scoresHook = nil
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	return rows, ok, nil
}

func (f *fakeSource) summaries(_ context.Context, _ userKey, convs []contract.ConversationID) ([]*summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSums != nil {
		return nil, f.failSums
	}
	out := make([]*summary, len(convs))
	for i, c := range convs {
		f.sumCalls[c]++
		out[i] = &summary{unread: f.unread[c]}
	}
	return out, nil
}

func conv(n uint64) contract.ConversationID {
	return contract.ConversationID{Hi: uint64(contract.KindDirect) << 60, Lo: n}
}

var alice = userKey{tenant: contract.TenantID{Lo: 1}, user: 1}

func testCache(src source, max int) *cache {
	return newCache(src, max, prometheus.NewCounter(prometheus.CounterOpts{Name: "r"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "f"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "e"}))
}

// firstPage returns the conversations and unread counts of a first page.
func firstPage(t *testing.T, c *cache, limit int) ([]uint64, []uint32) {
	t.Helper()
	rows, sums, _, err := c.page(context.Background(), alice, nil, limit)
	if err != nil {
		t.Fatal(err)
	}
	ids, unread := make([]uint64, len(rows)), make([]uint32, len(rows))
	for i, r := range rows {
		ids[i], unread[i] = r.conv.Lo, sums[i].unread
	}
	return ids, unread
}

// A write that lands while a rebuild reads the list (after its read) keeps its marker: the next
// first page shows it. (The predecessor dropped such markers because no snapshot was live yet:
// docs/adr/0010-session-snapshot-dirty-markers.md.)
func TestCacheMarkDuringRebuildIsKept(t *testing.T) {
	src := newFakeSource()
	c := testCache(src, 8)
	src.write(conv(1), 100, 1)
	src.listHook = func() {
		src.write(conv(2), 200, 1)
		c.mark(alice, conv(2))
	}
	if ids, _ := firstPage(t, c, 10); !slices.Equal(ids, []uint64{1}) {
		t.Fatalf("rebuild page = %v", ids)
	}
	if ids, _ := firstPage(t, c, 10); !slices.Equal(ids, []uint64{2, 1}) {
		t.Fatalf("after the in-flight write = %v, want [2 1]", ids)
	}
}

// A marker set again while a refresh is in flight (same conversation, newer write) survives the
// refresh; only the marker the refresh actually read is removed.
func TestCacheMarkDuringRefreshIsKept(t *testing.T) {
	src := newFakeSource()
	c := testCache(src, 8)
	src.write(conv(1), 100, 0)
	src.write(conv(2), 50, 0)
	firstPage(t, c, 10)
	src.write(conv(2), 150, 1)
	c.mark(alice, conv(2))
	src.scoresHook = func() {
		src.write(conv(2), 300, 2)
		c.mark(alice, conv(2))
	}
	if ids, _ := firstPage(t, c, 10); !slices.Equal(ids, []uint64{2, 1}) {
		t.Fatalf("refresh = %v, want [2 1]", ids)
	}
	if n := src.sumCalls[conv(2)]; n != 2 {
		t.Fatalf("content of 2 computed %d times, want 2", n)
	}
	// The marker of the write that landed during the refresh is still there: the next first page
	// re-reads the row instead of trusting content computed around the write.
	if ids, unread := firstPage(t, c, 10); !slices.Equal(ids, []uint64{2, 1}) || unread[0] != 2 || src.sumCalls[conv(2)] != 3 {
		t.Fatalf("second refresh = %v %v (computed %d times), want the newer write re-read", ids, unread, src.sumCalls[conv(2)])
	}
	rows, _, _, err := c.page(context.Background(), alice, nil, 1)
	if err != nil || rows[0].score != 300 {
		t.Fatalf("row of 2 = %v, %v; want score 300", rows, err)
	}
}

// A failed refresh or content read fails the request as a whole, changes nothing and keeps the
// markers, so the next request applies them.
func TestCacheFailureNeverReturnsAPartialPage(t *testing.T) {
	src := newFakeSource()
	c := testCache(src, 8)
	src.write(conv(1), 100, 0)
	src.write(conv(2), 90, 0)
	firstPage(t, c, 10)
	src.write(conv(3), 200, 5)
	c.mark(alice, conv(3))
	boom := errors.New("redis down")
	src.failScores = boom
	if _, _, _, err := c.page(context.Background(), alice, nil, 10); !errors.Is(err, boom) {
		t.Fatalf("refresh failure: err = %v", err)
	}
	src.failScores, src.failSums = nil, boom
	if rows, sums, _, err := c.page(context.Background(), alice, nil, 10); !errors.Is(err, boom) || rows != nil || sums != nil {
		t.Fatalf("content failure: %v rows %v", err, rows)
	}
	src.failSums = nil
	if ids, unread := firstPage(t, c, 10); !slices.Equal(ids, []uint64{3, 1, 2}) || unread[0] != 5 {
		t.Fatalf("after recovery = %v %v", ids, unread)
	}
}

// Row content is computed once and reused until the conversation is marked; a continuation page
// stays on the snapshot it started from.
func TestCacheContentReuseAndFrozenContinuation(t *testing.T) {
	src := newFakeSource()
	c := testCache(src, 8)
	for i := uint64(1); i <= 5; i++ {
		src.write(conv(i), 100*i, 0)
	}
	ids, _ := firstPage(t, c, 2)
	if !slices.Equal(ids, []uint64{5, 4}) {
		t.Fatalf("page 1 = %v", ids)
	}
	firstPage(t, c, 2)
	if src.sumCalls[conv(5)] != 1 {
		t.Fatalf("content of an unchanged row computed %d times", src.sumCalls[conv(5)])
	}
	src.write(conv(1), 900, 3) // conversation 1 becomes the newest
	c.mark(alice, conv(1))
	token := row{score: 400, conv: conv(4)}
	rows, _, more, err := c.page(context.Background(), alice, &token, 2)
	if err != nil || len(rows) != 2 || rows[0].conv != conv(3) || rows[1].conv != conv(2) || !more {
		t.Fatalf("continuation = %v more %v err %v, want [3 2] from the frozen snapshot", rows, more, err)
	}
	if ids, unread := firstPage(t, c, 2); !slices.Equal(ids, []uint64{1, 5}) || unread[0] != 3 || src.sumCalls[conv(5)] != 1 {
		t.Fatalf("next first page = %v %v (content of 5 computed %d times)", ids, unread, src.sumCalls[conv(5)])
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	src := newFakeSource()
	c := testCache(src, 2)
	ctx := context.Background()
	for u := contract.UserID(1); u <= 3; u++ {
		if _, _, _, err := c.page(ctx, userKey{user: u}, nil, 5); err != nil {
			t.Fatal(err)
		}
	}
	if c.users() != 2 || testutil.ToFloat64(c.evicted) != 1 {
		t.Fatalf("users %d evicted %v, want 2 and 1", c.users(), testutil.ToFloat64(c.evicted))
	}
	c.mark(userKey{user: 1}, conv(1)) // evicted: nothing to mark, the next request rebuilds
	if _, _, _, err := c.page(ctx, userKey{user: 1}, nil, 5); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.rebuilt); got != 4 {
		t.Fatalf("rebuilds = %v, want 4", got)
	}
}

func TestSnapshotOrderWindowAndReplace(t *testing.T) {
	rows := []row{{300, conv(1)}, {200, conv(9)}, {200, conv(4)}, {100, conv(2)}}
	s := newSnapshot(slices.Clone(rows))
	tests := []struct {
		after *row
		limit int
		want  []uint64
		more  bool
	}{
		{nil, 2, []uint64{1, 9}, true},
		{&row{200, conv(9)}, 2, []uint64{4, 2}, false},
		{&row{200, conv(5)}, 5, []uint64{4, 2}, false}, // a token between rows of equal activity
		{&row{250, conv(7)}, 1, []uint64{9}, true},     // a row that moved away still names a position
		{&row{100, conv(2)}, 3, []uint64{}, false},
	}
	for _, tc := range tests {
		got, more := s.window(tc.after, tc.limit)
		ids := make([]uint64, len(got))
		for i, r := range got {
			ids[i] = r.conv.Lo
		}
		if !slices.Equal(ids, tc.want) || more != tc.more {
			t.Errorf("window(%v, %d) = %v %v, want %v %v", tc.after, tc.limit, ids, more, tc.want, tc.more)
		}
	}
	// Small and large change sets (insertion vs one sort) must agree.
	var convs []contract.ConversationID
	var cur []row
	var ok []bool
	for i := uint64(1); i <= 40; i++ {
		convs = append(convs, conv(i))
		cur = append(cur, row{score: 1000 + i%7, conv: conv(i)})
		ok = append(ok, i != 9)
	}
	big, small := newSnapshot(slices.Clone(rows)), newSnapshot(slices.Clone(rows))
	big.replace(convs, cur, ok)
	for i := range convs {
		small.replace(convs[i:i+1], cur[i:i+1], ok[i:i+1])
	}
	if !slices.Equal(big.rows, small.rows) || len(big.rows) != 39 {
		t.Fatalf("replace paths disagree or lost rows: %d vs %d rows", len(big.rows), len(small.rows))
	}
	if !slices.IsSortedFunc(big.rows, func(a, b row) int {
		if a.before(b) {
			return -1
		}
		return 1
	}) {
		t.Fatal("rows not in list order after replace")
	}
}
