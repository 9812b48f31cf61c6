package mailboxstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// One sequence per message per shard: a duplicate record of the same dispatch at a later offset
// reuses the first canonical mailbox_seq, writes no second entry, and still moves the watermark;
// a repeated call of an applied record answers its original outcome.
func TestMaterializeFreshDuplicateRetry(t *testing.T) {
	f := newFix(t)
	a, b := f.user(), f.user()
	did := newDispatchID(t)
	first := f.mat(did, 1, 0, testDay, a, b)
	got := f.apply(first)
	want := seqOf(t, 1, 0)
	if got[0] != (Outcome{Seq: want}) || f.watermark() != 0 {
		t.Fatalf("fresh: %+v, watermark %d", got[0], f.watermark())
	}
	if r := f.apply(first); r[0] != (Outcome{Seq: want, Retry: true}) {
		t.Fatalf("retry of an applied record: %+v", r[0])
	}
	other := f.mat(newDispatchID(t), 2, 1, testDay, a)
	dup := f.mat(did, 1, 2, testDay, a, b)
	dup.PrevOffset = 1
	r := f.apply(other, dup)
	if r[1] != (Outcome{Seq: want, Duplicate: true}) || f.watermark() != 2 {
		t.Fatalf("duplicate: %+v, watermark %d", r[1], f.watermark())
	}
	if r := f.apply(dup); r[0] != (Outcome{Seq: want, Duplicate: true, Retry: true}) {
		t.Fatalf("retry of a duplicate: %+v", r[0])
	}
	for _, u := range []contract.UserID{a, b} {
		p := f.pull(u, 0, 100, 1<<20)
		wantSeqs := []contract.MailboxSeq{want}
		if u == a {
			wantSeqs = append(wantSeqs, seqOf(t, 1, 1))
		}
		if !slices.Equal(seqs(p), wantSeqs) {
			t.Fatalf("user %d entries %v, want %v (a duplicate must not add an entry)", u, seqs(p), wantSeqs)
		}
	}
}

// Same dispatch_id with another payload_digest is a conflict; nothing moves.
func TestMaterializeConflict(t *testing.T) {
	f := newFix(t)
	a := f.user()
	did := newDispatchID(t)
	f.apply(f.mat(did, 1, 0, testDay, a))
	_, err := f.store.Materialize(f.ctx, []Materialization{f.mat(did, 9, 1, testDay, a)})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Shard != f.shard || ce.Offset != 1 || ce.DispatchID != did {
		t.Fatalf("want *ConflictError for shard %d offset 1, got %v", f.shard, err)
	}
	if f.watermark() != 0 {
		t.Fatalf("watermark moved to %d on a conflict", f.watermark())
	}
}

// The watermark CAS and the epoch fence a second owner before anything is written.
func TestMaterializeFencing(t *testing.T) {
	f := newFix(t)
	a := f.user()
	f.apply(f.mat(newDispatchID(t), 1, 0, testDay, a))
	stale := f.mat(newDispatchID(t), 1, 5, testDay, a)
	stale.PrevOffset = 3 // this owner thinks offset 3 was last; the shard says 0
	var fe *FencedError
	if _, err := f.store.Materialize(f.ctx, []Materialization{stale}); !errors.As(err, &fe) {
		t.Fatalf("watermark CAS: want *FencedError, got %v", err)
	}
	wrongEpoch := f.mat(newDispatchID(t), 1, 1, testDay, a)
	wrongEpoch.Epoch = 2
	if _, err := f.store.Materialize(f.ctx, []Materialization{wrongEpoch}); !errors.As(err, &fe) {
		t.Fatalf("epoch fence: want *FencedError, got %v", err)
	}
	if f.watermark() != 0 || len(f.pull(a, 0, 100, 1<<20).Entries) != 1 {
		t.Fatal("a fenced call wrote something")
	}
	// A batch stops at its first failure: the records after it did not run.
	ok1 := f.mat(newDispatchID(t), 1, 1, testDay, a)
	bad := f.mat(newDispatchID(t), 1, 2, testDay, a)
	bad.Epoch = 3
	after := f.mat(newDispatchID(t), 1, 3, testDay, a)
	out, err := f.store.Materialize(f.ctx, []Materialization{ok1, bad, after})
	if len(out) != 1 || !errors.As(err, &fe) || fe.Offset != 2 || f.watermark() != 1 {
		t.Fatalf("batch: %d outcomes, err %v, watermark %d", len(out), err, f.watermark())
	}
}

func TestMaterializeValidation(t *testing.T) {
	f := newFix(t)
	a := f.user()
	foreign := f.user()
	for f.store.shards.UserShard(f.tenant, foreign) == f.shard {
		foreign++
	}
	cases := map[string]func(*Materialization){
		"short digest":     func(m *Materialization) { m.Digest = m.Digest[:31] },
		"prev not below":   func(m *Materialization) { m.PrevOffset = m.Offset },
		"no entries":       func(m *Materialization) { m.Entries = nil },
		"zero created_at":  func(m *Materialization) { m.CreatedAtMs = 0 },
		"epoch 0":          func(m *Materialization) { m.Epoch = 0 },
		"offset > 48 bits": func(m *Materialization) { m.Offset = contract.MaxLogOffset + 1 },
		"recipient elsewhere": func(m *Materialization) {
			m.Entries[0].User = foreign
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := f.mat(newDispatchID(t), 1, 4, testDay, a)
			mutate(&m)
			if _, err := f.store.Materialize(f.ctx, []Materialization{m}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
		})
	}
	if f.watermark() != -1 {
		t.Fatal("an invalid call wrote the watermark")
	}
}

// After SCRIPT FLUSH (a Redis restart looks the same) calls reload the script and succeed.
func TestMaterializeAfterScriptFlush(t *testing.T) {
	f := newFix(t)
	a := f.user()
	if err := f.rdb.ScriptFlush(f.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	out := f.apply(f.mat(newDispatchID(t), 1, 0, testDay, a), f.mat(newDispatchID(t), 1, 1, testDay, a))
	if len(out) != 2 || f.watermark() != 1 {
		t.Fatalf("after flush: %+v, watermark %d", out, f.watermark())
	}
}
