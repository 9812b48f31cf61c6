package msgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// PendingCommits returns unfinished (R and D) commits reserved before the bound, oldest first,
// with the CommitKey round-tripped from the recovery index; committed ones leave the index.
func TestPendingCommits(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	// Reserved "in 1970": older than anything other tests leave in the shared index.
	r := f.intent(t, 10)
	r.NowMs = 1000
	d := f.intent(t, 10)
	d.NowMs = 2000
	c := f.intent(t, 10)
	c.NowMs = 3000
	recent := f.intent(t, 10)
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, in := range []Intent{d, c, recent} {
		reserveOne(t, ctx, s, in)
	}
	if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: c.Key, CommittedAtMs: time.Now().UnixMilli()}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	got, err := s.PendingCommits(ctx, 3001, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != r.Key || got[1] != d.Key {
		t.Fatalf("PendingCommits(3001) = %+v, want [R key, D key]", got)
	}
	if got, _ := s.PendingCommits(ctx, 2000, 10); len(got) != 1 || got[0] != r.Key {
		t.Fatalf("bound is exclusive: got %+v", got)
	}
	if got, _ := s.PendingCommits(ctx, 3001, 1); len(got) != 1 {
		t.Fatalf("limit 1 returned %d", len(got))
	}
	if _, err := s.PendingCommits(ctx, 3001, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("limit 0: %v", err)
	}
	// The recovery loop can finish both from the returned keys alone.
	if _, err := s.Record(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: r.Key, CommittedAtMs: time.Now().UnixMilli()}, {Key: d.Key, CommittedAtMs: time.Now().UnixMilli()}}); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if got, _ := s.PendingCommits(ctx, 3001, 10); len(got) != 0 {
		t.Fatalf("after commit: %+v", got)
	}
	// An index entry whose hash vanished is reported, never skipped.
	for _, member := range []string{commitKey(f.intent(t, 1).Key), commitKey(recent.Key) + "x"} {
		rdb.ZAdd(ctx, pendingKey, redis.Z{Score: 500, Member: member})
		_, err := s.PendingCommits(ctx, 3001, 10)
		rdb.ZRem(ctx, pendingKey, member)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("dangling index entry: %v, want ErrCorrupt", err)
		}
	}
}
