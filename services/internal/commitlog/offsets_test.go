package commitlog

import (
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

func TestOffsetStoreRoundTrip(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	s, err := NewOffsetStore(adm, uniqueName(t, "qim-fanout-test-"), contract.TopicOutbox)
	if err != nil {
		t.Fatal(err)
	}
	if off, found, err := s.Fetch(ctx, 0); err != nil || found || off != -1 {
		t.Fatalf("Fetch on a new group = (%d, %v, %v), want (-1, false, nil)", off, found, err)
	}
	for _, next := range []int64{0, 42, 43} {
		if err := s.Commit(ctx, 0, next); err != nil {
			t.Fatalf("Commit(0, %d) = %v", next, err)
		}
		off, found, err := s.Fetch(ctx, 0)
		if err != nil || !found || off != next {
			t.Fatalf("Fetch after Commit(%d) = (%d, %v, %v)", next, off, found, err)
		}
	}
	// The stored position feeds ValidateStart: 43 is beyond a short log and must be refused.
	wm, err := adm.Watermarks(ctx, contract.TopicOutbox, 0)
	if err != nil {
		t.Fatal(err)
	}
	off, found, _ := s.Fetch(ctx, 0)
	if _, err := ValidateStart(off, found, wm[0]); (err == nil) != (off <= wm[0].High) {
		t.Fatalf("ValidateStart(%d, %v, %+v) = %v", off, found, wm[0], err)
	}
	if err := s.Commit(ctx, 0, -1); err == nil {
		t.Fatal("Commit of a negative offset returned nil")
	}
	if _, err := NewOffsetStore(adm, "", contract.TopicOutbox); err == nil {
		t.Fatal("NewOffsetStore without a group returned nil error")
	}
}

// CommitAll stores several partitions' positions in one request; each reads back.
func TestOffsetStoreCommitAll(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	adm, err := NewAdmin(ep.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	s, err := NewOffsetStore(adm, uniqueName(t, "qim-notify-test-"), contract.TopicDispatch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: 3, 5: 0, 7: 11}
	if err := s.CommitAll(ctx, want); err != nil {
		t.Fatal(err)
	}
	for p, next := range want {
		if off, found, err := s.Fetch(ctx, p); err != nil || !found || off != next {
			t.Fatalf("Fetch(%d) after CommitAll = (%d, %v, %v), want %d", p, off, found, err, next)
		}
	}
	if err := s.CommitAll(ctx, map[int32]int64{1: -1}); err == nil {
		t.Fatal("CommitAll of a negative offset returned nil")
	}
}
