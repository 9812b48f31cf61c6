package msgstore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// seedHistory writes n messages into f's conversation in batches, opening holes on the way: small
// ones, a gap of 40 empty buckets (more than twice the scan bound of 16, so some page is all scan) and seqs that were reserved
// but never recorded. It returns the seqs that have history, ascending.
func seedHistory(t *testing.T, ctx context.Context, s *Store, rdb *redis.Client, f fixture, n int) []uint64 {
	t.Helper()
	ck := newConvKeys(f.tenant, f.conv)
	holes := map[int]int64{300: 7, 1000: 40 * bucketWidth, 1500: bucketWidth + 3, 2200: 1}
	var want []uint64
	for done := 0; done < n; {
		if gap, ok := holes[done]; ok {
			rdb.IncrBy(ctx, ck.seq, gap)
			delete(holes, done)
		}
		if done%700 == 350 { // reserved, never recorded: an index hole with a live counter
			if _, err := s.Reserve(ctx, f.intent(t, 10)); err != nil {
				t.Fatal(err)
			}
		}
		size := min(50, n-done)
		if next := nextHole(holes, done); next > done && next-done < size {
			size = next - done
		}
		intents := make([]Intent, size)
		for i := range intents {
			intents[i] = f.intent(t, 20+(done+i)%200)
		}
		cs, errs := s.ReserveAndRecord(ctx, intents)
		for i := range cs {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			want = append(want, uint64(cs[i].Seq))
		}
		done += size
	}
	return want
}

func nextHole(holes map[int]int64, after int) int {
	best := -1
	for at := range holes {
		if at > after && (best < 0 || at < best) {
			best = at
		}
	}
	return best
}

// readAll pages through the conversation in one direction and returns every seq seen in reading
// order, the number of pages and how many of them ended at the empty-bucket scan bound.
func readAll(t *testing.T, ctx context.Context, s *Store, f fixture, dir Direction, limit, maxBytes int) ([]uint64, int, int) {
	t.Helper()
	var seen []uint64
	pages, emptyMore := 0, 0
	q := HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: dir, Limit: limit, MaxBytes: maxBytes}
	for {
		p, err := s.HistoryPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		var page []uint64
		for _, r := range p.Records {
			page = append(page, decodeRecord(t, r).GetConversationSeq())
		}
		if !slices.IsSorted(page) {
			t.Fatalf("page not ascending: %v", page)
		}
		if dir == Older {
			slices.Reverse(page)
		}
		seen = append(seen, page...)
		if len(p.Records) == 0 && p.HasMore {
			emptyMore++
		}
		if !p.HasMore {
			return seen, pages, emptyMore
		}
		if p.NextAnchor == q.Anchor || pages > 10000 {
			t.Fatalf("paging does not advance (anchor %d)", q.Anchor)
		}
		q.Anchor = p.NextAnchor
	}
}

// OLDER and NEWER paging cover every stored record exactly once, in order, across holes wider
// than the scan bound, with limit and byte cuts.
func TestHistoryPagingCoversEverything(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	want := seedHistory(t, ctx, s, rdb, f, 3000)
	desc := slices.Clone(want)
	slices.Reverse(desc)
	for _, tc := range []struct {
		name      string
		dir       Direction
		limit, mb int
		scan      int // WithMaxEmptyBucketScan; 0 = default
	}{
		{"older limit 200", Older, 200, 0, 0},
		{"newer limit 200", Newer, 200, 0, 0},
		{"older default limit", Older, 0, 0, 0},
		{"newer small bytes", Newer, 37, 4000, 0},
		{"older small bytes", Older, 200, 2500, 0},
		{"newer scan bound 1", Newer, 200, 0, 1},
		{"older scan bound 3", Older, 120, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := s
			if tc.scan > 0 {
				st = New(rdb, WithMaxEmptyBucketScan(tc.scan))
			}
			got, pages, emptyMore := readAll(t, ctx, st, f, tc.dir, tc.limit, tc.mb)
			exp := want
			if tc.dir == Older {
				exp = desc
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("read %d seqs (first %v), want %d (first %v)", len(got), got[:min(5, len(got))], len(exp), exp[:5])
			}
			if emptyMore == 0 {
				t.Errorf("no page stopped at the empty-bucket bound (%d pages); the gap did not exercise it", pages)
			}
		})
	}
}

// The first record is returned even when it alone exceeds the byte budget; later ones are cut.
func TestHistoryFirstRecordOverBudget(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	for _, size := range []int{100, 100, 600 << 10} {
		reserveOne(t, ctx, s, f.intent(t, size))
	}
	steps := []struct {
		dir        Direction
		anchor     uint64
		seqs       []uint64
		more       bool
		nextAnchor uint64
	}{
		{Older, 0, []uint64{3}, true, 3},
		{Older, 3, []uint64{1, 2}, false, 1},
		{Newer, 0, []uint64{1, 2}, true, 2},
		{Newer, 2, []uint64{3}, false, 3},
	}
	for _, st := range steps {
		p, err := s.HistoryPage(ctx, HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: st.dir, Anchor: st.anchor})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, r := range p.Records {
			seqs = append(seqs, decodeRecord(t, r).GetConversationSeq())
		}
		if !slices.Equal(seqs, st.seqs) || p.HasMore != st.more || p.NextAnchor != st.nextAnchor {
			t.Errorf("dir %d anchor %d: (%v, more %v, next %d), want (%v, %v, %d)",
				st.dir, st.anchor, seqs, p.HasMore, p.NextAnchor, st.seqs, st.more, st.nextAnchor)
		}
	}
}

// A missing, undecodable or misplaced record fails the whole page, naming the seq.
func TestHistoryCorruptionFailsPage(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	other := newFixture(t)
	for range 10 {
		reserveOne(t, ctx, s, f.intent(t, 30))
	}
	foreign := reserveOne(t, ctx, s, other.intent(t, 30))
	ck := newConvKeys(f.tenant, f.conv)
	key := func(seq uint64) string { return string(appendNumKey(nil, ck.hrec, seq)) }
	six := rdb.Get(ctx, key(6)).Val()
	for _, tc := range []struct {
		name  string
		value *string // nil deletes
	}{
		{"missing record", nil},
		{"garbage bytes", ptr("\xff\xff\xff\xff not a protobuf")},
		{"another seq's record", &six},
		{"another conversation's record", ptr(string(foreign.Record))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := rdb.Get(ctx, key(5)).Val()
			defer rdb.Set(ctx, key(5), orig, 0)
			if tc.value == nil {
				rdb.Del(ctx, key(5))
			} else {
				rdb.Set(ctx, key(5), *tc.value, 0)
			}
			for _, dir := range []Direction{Older, Newer} {
				_, err := s.HistoryPage(ctx, HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: dir})
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Seq != 5 || ce.Conversation != f.conv {
					t.Fatalf("dir %d: err = %v, want CorruptError at seq 5", dir, err)
				}
			}
			// A page that does not contain seq 5 is unaffected.
			if p, err := s.HistoryPage(ctx, HistoryQuery{Tenant: f.tenant, Conversation: f.conv, Direction: Newer, Anchor: 5}); err != nil || len(p.Records) != 5 {
				t.Fatalf("page after seq 5: %d records, %v", len(p.Records), err)
			}
		})
	}
}

// record.lua never overwrites an existing history record with different bytes. A RESERVED
// commit whose seq holds another record lost it to a send that reserved while this commit's INCR
// was missing (a reserve that died after its first write): nothing has published that seq for
// it, so it moves to the next free one. When that slot is taken too, the counter went back: the
// call is refused as corrupt and writes nothing.
func TestRecordRefusesDifferentHistory(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 30)
	if _, err := s.Reserve(ctx, in); err != nil {
		t.Fatal(err)
	}
	ck := newConvKeys(f.tenant, f.conv)
	hkey := func(seq uint64) string { return string(appendNumKey(nil, ck.hrec, seq)) }
	rdb.Set(ctx, hkey(1), "someone else's record", 0)
	rdb.Set(ctx, hkey(2), "and another", 0)
	if _, err := s.Record(ctx, in.Key); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Record with seqs 1 and 2 taken: %v, want ErrCorrupt", err)
	}
	if c, _, _ := s.LoadCommit(ctx, in.Key); c.State != StateReserved || c.Seq != 1 || counter(t, rdb, f) != 1 {
		t.Fatalf("after a refused Record: %v at seq %d, counter %d; want RESERVED at 1, counter 1", c.State, c.Seq, counter(t, rdb, f))
	}
	rdb.Del(ctx, hkey(2))
	d, err := s.Record(ctx, in.Key)
	if err != nil || d.State != StateRecorded || d.Seq != 2 || !bytes.Equal(d.Record, AppendSeq(in.Record, 2)) {
		t.Fatalf("Record with seq 1 taken: %+v, %v; want RECORDED at seq 2", d, err)
	}
	if got := rdb.Get(ctx, hkey(1)).Val(); got != "someone else's record" {
		t.Fatal("Record overwrote history")
	}
	if got := rdb.Get(ctx, hkey(2)).Val(); got != string(d.Record) || counter(t, rdb, f) != 2 {
		t.Fatalf("seq 2 holds %q, counter %d; want the moved record, counter 2", got, counter(t, rdb, f))
	}
	// The same bytes already in place (a retry after a partial write) are fine.
	in2 := f.intent(t, 30)
	r2, err := s.Reserve(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, hkey(uint64(r2.Seq)), r2.Record, 0)
	if d, err := s.Record(ctx, in2.Key); err != nil || d.State != StateRecorded || d.Seq != r2.Seq {
		t.Fatalf("Record over identical bytes: %+v, %v", d, err)
	}
}

func ptr(s string) *string { return &s }
