package cqlstore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/qim-dev/qim/services/internal/msgstore"
)

// Trimmed history reads exactly as it did before the trim, across the hot floor, in both
// directions, under limit and byte cuts, over a hole wider than both tiers' empty-bucket scan
// bounds. A seq committed late holds the floor below it (later candidates wait), and a record
// back in Redis below the floor is read once, from the archive. Session tails below and across
// the floor are unchanged too. A store without an archive, and an archive missing one record,
// fail the read instead of shortening it.
func TestTrimmedHistoryReadsSeamlesslyAcrossTiers(t *testing.T) {
	ctx := testCtx(t)
	f := newTierFixture(t)
	base := time.Now().Add(-time.Hour).UnixMilli()
	const late = 1500
	cat := func(i int) int64 {
		if i == late {
			return base + 10_000
		}
		return base + int64(i)
	}
	f.commit(t, ctx, 2600, map[int]int64{300: 7, 1200: 70 * 1024, 2300: 5}, cat)
	want := f.seqs
	type readCase struct {
		dir             msgstore.Direction
		limit, maxBytes int
	}
	cases := []readCase{{msgstore.Older, 37, 0}, {msgstore.Newer, 37, 0}, {msgstore.Older, 200, 1500}, {msgstore.Newer, 1, 0}}
	check := func(step string, s *msgstore.Store) {
		for _, c := range cases {
			got, err := f.readAll(t, ctx, s, c.dir, c.limit, c.maxBytes)
			if err != nil {
				t.Fatalf("%s: read %v limit %d: %v", step, c.dir, c.limit, err)
			}
			exp := slices.Clone(want)
			if c.dir == msgstore.Older {
				slices.Reverse(exp)
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("%s: read %v limit %d max %d: %d seqs, want %d (first difference near %v)", step, c.dir,
					c.limit, c.maxBytes, len(got), len(exp), firstDiff(got, exp))
			}
		}
	}
	check("before the trim", f.tiered)
	tails := []msgstore.TailQuery{
		{Conversation: f.conv, Latest: want[2100], After: want[1990], Min: 5},     // across the floor
		{Conversation: f.conv, Latest: want[2010], After: want[2010], Min: 64},    // head candidates below it
		{Conversation: f.conv, Latest: want[1000], After: want[950], Min: 3},      // wholly below it
		{Conversation: f.conv, Latest: want[2599], After: want[2500], Min: 10},    // wholly above it
		{Conversation: f.conv, Latest: want[late], After: want[late-20], Min: 30}, // around the late one
	}
	before, err := f.tiered.Tails(ctx, f.tenant, tails)
	if err != nil {
		t.Fatal(err)
	}

	// Messages 0..2000 are due, but the late one (1500, still hot) holds 1501..2000.
	if n, held := f.trim(t, ctx, base+2000); n != 1500 || held != 100 {
		t.Fatalf("trimmed %d records, %d held in the last call; want 1500 and 100 (of the 500 behind the late one)", n, held)
	}
	floorIs := func(step string, want uint64) {
		if fl, err := f.hot.HotFloor(ctx, f.tenant, f.conv); err != nil || fl != want {
			t.Fatalf("%s: hot floor = %d, %v; want %d", step, fl, err, want)
		}
	}
	floorIs("first trim", want[1499])
	for _, i := range []int{100, 1495} { // one far below F, one in F's own bucket
		if i == 1495 && want[i]/1024 != want[1499]/1024 {
			t.Fatalf("seq %d is not in the floor's bucket", want[i])
		}
		f.rehot(t, ctx, want[i], f.raws[i])
	}
	tailsSame := func(step string) {
		after, err := f.tiered.Tails(ctx, f.tenant, tails)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if b, a := tailSeqs(t, before), tailSeqs(t, after); !slices.EqualFunc(b, a, slices.Equal) {
			t.Fatalf("%s: tails changed by the trim:\nbefore %v\nafter  %v", step, b, a)
		}
	}
	check("after the first trim", f.tiered)
	tailsSame("after the first trim")
	// Once the late one is due, everything goes: the whole history is read from the archive.
	if n, held := f.trim(t, ctx, base+10_000); n != len(want)-1500 || held != 0 {
		t.Fatalf("second trim: %d records, %d held; want %d, 0", n, held, len(want)-1500)
	}
	floorIs("second trim", want[len(want)-1])
	check("after the second trim", f.tiered)
	tailsSame("after the second trim")
	// Without the archive tier the store refuses what lies below the floor.
	if _, err := f.readAll(t, ctx, f.hot, msgstore.Older, 50, 0); !errors.Is(err, msgstore.ErrNoArchive) {
		t.Fatalf("read below the floor without an archive = %v, want ErrNoArchive", err)
	}
	if _, err := f.hot.Tails(ctx, f.tenant, tails[:1]); !errors.Is(err, msgstore.ErrNoArchive) {
		t.Fatalf("tail across the floor without an archive = %v, want ErrNoArchive", err)
	}
	// An archived record lost: every page that needs it fails, as a whole.
	tb, cb := f.tenant.Bytes(), f.conv.Bytes()
	if err := f.st.s.Query(`DELETE FROM message_record WHERE tenant_id = ? AND conversation_id = ? AND seq_bucket = ? AND conversation_seq = ?`,
		tb[:], cb[:], int64(want[100]/1024), int64(want[100])).WithContext(ctx).Exec(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []msgstore.Direction{msgstore.Older, msgstore.Newer} {
		if _, err := f.readAll(t, ctx, f.tiered, dir, 50, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read %v over a lost archive record = %v, want ErrCorrupt", dir, err)
		}
	}
}

func firstDiff(a, b []uint64) []uint64 {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return []uint64{uint64(i), a[i], b[i]}
		}
	}
	return []uint64{uint64(min(len(a), len(b)))}
}
