package msgstore

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// recordN commits n messages through the fused path and returns their seqs.
func recordN(t *testing.T, s *Store, f fixture, n int) []uint64 {
	t.Helper()
	ins := make([]Intent, n)
	for i := range ins {
		ins[i] = f.intent(t, 8)
	}
	cs, errs := s.ReserveAndRecord(testCtx(t), ins)
	seqs := make([]uint64, n)
	for i := range cs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		seqs[i] = uint64(cs[i].Seq)
	}
	return seqs
}

func tailSeqs(t *testing.T, tail Tail) []uint64 {
	t.Helper()
	out := make([]uint64, len(tail.Records))
	for i, b := range tail.Records {
		out[i] = decodeRecord(t, b).GetConversationSeq()
	}
	return out
}

func TestTails(t *testing.T) {
	rdb := coreClient(t)
	s := New(rdb)
	ctx := testCtx(t)
	plain, holes, wide, far, empty := newFixture(t), newFixture(t), newFixture(t), newFixture(t), newFixture(t)
	for _, f := range []*fixture{&holes, &wide, &far, &empty} {
		f.tenant = plain.tenant // one tenant: Tails reads one tenant's conversations
	}
	recordN(t, s, plain, 10)
	// holes: 1..5 recorded, 6 reserved only (a hole in history), 7 recorded.
	recordN(t, s, holes, 5)
	if _, err := s.Reserve(ctx, holes.intent(t, 8)); err != nil {
		t.Fatal(err)
	}
	recordN(t, s, holes, 1)
	// wide: the counter jumps to 1020 so ten messages straddle the bucket boundary at 1024.
	if err := rdb.Set(ctx, newConvKeys(wide.tenant, wide.conv).seq, 1020, 0).Err(); err != nil {
		t.Fatal(err)
	}
	recordN(t, s, wide, 10)
	// far: three messages, then the counter is pushed past several empty buckets.
	recordN(t, s, far, 3)
	if err := rdb.Set(ctx, newConvKeys(far.tenant, far.conv).seq, 5000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	convs := []contract.ConversationID{plain.conv, holes.conv, wide.conv, far.conv, empty.conv}
	latest, err := s.LatestSeqs(ctx, plain.tenant, convs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(latest, []uint64{10, 7, 1030, 5000, 0}) {
		t.Fatalf("LatestSeqs = %v", latest)
	}
	tests := []struct {
		name string
		q    TailQuery
		want []uint64
	}{
		{"span", TailQuery{Conversation: plain.conv, Latest: 10, After: 7, Min: 1}, []uint64{10, 9, 8}},
		{"min beyond span", TailQuery{Conversation: plain.conv, Latest: 10, After: 9, Min: 3}, []uint64{10, 9, 8}},
		{"nothing after, head only", TailQuery{Conversation: plain.conv, Latest: 10, After: 10, Min: 1}, []uint64{10}},
		{"upper bound respected", TailQuery{Conversation: plain.conv, Latest: 8, After: 5}, []uint64{8, 7, 6}},
		{"hole skipped", TailQuery{Conversation: holes.conv, Latest: 7, After: 4, Min: 1}, []uint64{7, 5}},
		{"across bucket boundary", TailQuery{Conversation: wide.conv, Latest: 1030, After: 1020}, []uint64{1030, 1029, 1028, 1027, 1026, 1025, 1024, 1023, 1022, 1021}},
		{"head found behind empty buckets", TailQuery{Conversation: far.conv, Latest: 5000, After: 5000, Min: 2}, []uint64{3, 2}},
		{"empty conversation", TailQuery{Conversation: empty.conv, Latest: 0, Min: 4}, []uint64{}},
	}
	qs := make([]TailQuery, len(tests))
	for i, tc := range tests {
		qs[i] = tc.q
	}
	tails, err := s.Tails(ctx, plain.tenant, qs) // all in one call: the batch path is the product path
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		if got := tailSeqs(t, tails[i]); !slices.Equal(got, tc.want) {
			t.Errorf("%s: seqs %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A missing or undecodable record inside the requested tail fails the whole call, not only its
// conversation: a session page must never be built from a silently shortened tail.
func TestTailsFailClosedOnCorruptRecord(t *testing.T) {
	rdb := coreClient(t)
	s := New(rdb)
	ctx := testCtx(t)
	good, bad := newFixture(t), newFixture(t)
	bad.tenant = good.tenant
	recordN(t, s, good, 2)
	recordN(t, s, bad, 3)
	qs := []TailQuery{{Conversation: good.conv, Latest: 2, Min: 1}, {Conversation: bad.conv, Latest: 3, After: 1}}
	if _, err := s.Tails(ctx, good.tenant, qs); err != nil {
		t.Fatal(err)
	}
	k := newConvKeys(bad.tenant, bad.conv).hrec + strconv.Itoa(2)
	for _, corrupt := range []func() error{
		func() error { return rdb.Del(ctx, k).Err() },
		func() error { return rdb.Set(ctx, k, "\xff\xff not a record", 0).Err() },
	} {
		if err := corrupt(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Tails(ctx, good.tenant, qs)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Seq != 2 || ce.Conversation != bad.conv {
			t.Fatalf("Tails with record 2 broken = %v, want *CorruptError at seq 2", err)
		}
	}
}

func TestTailQueryValidate(t *testing.T) {
	conv := contract.ConversationID{Hi: 0x2000000000000000, Lo: 1}
	tests := []struct {
		name string
		q    TailQuery
		ok   bool
	}{
		{"ok", TailQuery{Conversation: conv, Latest: 500, After: 300, Min: 1}, true},
		{"widest span", TailQuery{Conversation: conv, Latest: MaxTailSpan + 5, After: 5, Min: MaxTailMin}, true},
		{"after beyond latest", TailQuery{Conversation: conv, Latest: 5, After: 9}, true},
		{"zero conversation", TailQuery{Latest: 5}, false},
		{"negative min", TailQuery{Conversation: conv, Min: -1}, false},
		{"min too large", TailQuery{Conversation: conv, Min: MaxTailMin + 1}, false},
		{"span too wide", TailQuery{Conversation: conv, Latest: MaxTailSpan + 6, After: 5}, false},
	}
	for _, tc := range tests {
		err := tc.q.validate()
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("%s: validate = %v", tc.name, err)
		}
	}
}
