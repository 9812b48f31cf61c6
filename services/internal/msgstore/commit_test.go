package msgstore

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// Same key + same identity twice: one message, one seq, one history entry.
func TestIdempotentRetryReturnsOriginal(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 200)
	first := reserveOne(t, ctx, s, in)
	if !first.Fresh || first.State != StateRecorded || first.Seq != 1 {
		t.Fatalf("first = fresh %v state %v seq %d, want fresh D 1", first.Fresh, first.State, first.Seq)
	}
	again := reserveOne(t, ctx, s, in)
	if again.Fresh || again.MessageID != first.MessageID || again.Seq != first.Seq || !bytes.Equal(again.Record, first.Record) {
		t.Fatalf("retry = %+v, want the original commit", again)
	}
	if n := counter(t, rdb, f); n != 1 {
		t.Errorf("counter = %d after a retry, want 1", n)
	}
	ck := newConvKeys(f.tenant, f.conv)
	if n := rdb.ZCard(ctx, string(appendNumKey(nil, ck.hidx, 0))).Val(); n != 1 {
		t.Errorf("history index has %d entries, want 1", n)
	}
	stored := rdb.Get(ctx, string(appendNumKey(nil, ck.hrec, 1))).Val()
	if stored != string(first.Record) {
		t.Error("history record differs from the commit record")
	}
}

// Same key + different identity: conflict carrying the original, and no sequence consumed.
func TestIdentityConflict(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 50)
	first := reserveOne(t, ctx, s, in)
	other := in
	other.Identity[35] ^= 1
	other.MessageID = f.intent(t, 1).MessageID
	_, errs := s.ReserveAndRecord(ctx, []Intent{other})
	var ce *IdentityConflictError
	if !errors.Is(errs[0], ErrIdentityConflict) || !errors.As(errs[0], &ce) {
		t.Fatalf("err = %v, want IdentityConflictError", errs[0])
	}
	if ce.MessageID != first.MessageID || ce.Seq != first.Seq {
		t.Errorf("conflict names (%s, %d), want (%s, %d)", ce.MessageID, ce.Seq, first.MessageID, first.Seq)
	}
	if _, err := s.Reserve(ctx, other); !errors.Is(err, ErrIdentityConflict) {
		t.Errorf("Reserve: err = %v, want conflict", err)
	}
	if n := counter(t, rdb, f); n != 1 {
		t.Errorf("counter = %d after conflicts, want 1", n)
	}
}

// Every argument is validated in Lua before the first write: calling the script directly with bad
// input (which the Go API cannot even express) errors and consumes no sequence.
func TestScriptValidatesBeforeWriting(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 10)
	mutate := func(name string, v any) func(call) call {
		return func(c call) call { return c.WithArg(name, v) }
	}
	cases := map[string]func(call) call{
		"35-byte identity":    mutate("identity", make([]byte, 35)),
		"37-byte identity":    mutate("identity", make([]byte, 37)),
		"zero message_id":     mutate("message_id", make([]byte, 16)),
		"15-byte message_id":  mutate("message_id", make([]byte, 15)),
		"zero conversation":   mutate("conversation_id", make([]byte, 16)),
		"empty record":        mutate("record", []byte{}),
		"record over 4 MiB":   mutate("record", make([]byte, contract.MaxFramePayload+1)),
		"now_ms zero":         mutate("now_ms", 0),
		"now_ms negative":     mutate("now_ms", -5),
		"now_ms not a number": mutate("now_ms", "12abc"),
		"now_ms exponent":     mutate("now_ms", "1e12"),
		"missing arguments":   func(c call) call { return c.WithoutArg("max_record_bytes") },
	}
	for _, sc := range []*reserveBinding{s.scripts.reserveAndRecord, s.scripts.reserve} {
		for name, bad := range cases {
			cmds, err := runCalls(ctx, rdb, []call{bad(s.reserveCall(sc, in))})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := commitResult("test", CommitKey{}, cmds[0]); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s %s: err = %v, want ErrInvalidArgument", sc.Script().Name(), name, err)
			}
		}
	}
	if n := counter(t, rdb, f); n != 0 {
		t.Fatalf("counter = %d after invalid input, want 0", n)
	}
	if n := rdb.Exists(ctx, commitKey(in.Key)).Val(); n != 0 {
		t.Error("invalid input created the commit hash")
	}
	// The Go API refuses the same classes without a round trip.
	for name, bad := range map[string]func(*Intent){
		"zero message_id": func(i *Intent) { i.MessageID = contract.MessageID{} },
		"empty record":    func(i *Intent) { i.Record = nil },
		"zero now":        func(i *Intent) { i.NowMs = 0 },
		"zero cmid":       func(i *Intent) { i.Key.ClientMessageID = contract.ClientMessageID{} },
	} {
		x := in
		bad(&x)
		if _, errs := s.ReserveAndRecord(ctx, []Intent{x}); !errors.Is(errs[0], ErrInvalidArgument) {
			t.Errorf("Go %s: err = %v, want ErrInvalidArgument", name, errs[0])
		}
	}
}

// The Lua varint encoder and AppendSeq produce identical bytes, also at the top of the exact
// range; at 2^53 the script refuses without writing.
func TestLuaSeqMatchesGo(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	ck := newConvKeys(f.tenant, f.conv)
	for _, start := range []uint64{0, 126, 16382, 1<<53 - 2} {
		rdb.Set(ctx, ck.seq, start, 0)
		in := f.intent(t, 30)
		c := reserveOne(t, ctx, s, in)
		if uint64(c.Seq) != start+1 {
			t.Fatalf("seq = %d, want %d", c.Seq, start+1)
		}
		if want := AppendSeq(in.Record, start+1); !bytes.Equal(c.Record, want) {
			t.Fatalf("seq %d: Lua record %x, Go %x", start+1, c.Record[len(in.Record):], want[len(in.Record):])
		}
		if got := decodeRecord(t, c.Record).GetConversationSeq(); got != start+1 {
			t.Fatalf("decoded conversation_seq %d, want %d", got, start+1)
		}
	}
	_, errs := s.ReserveAndRecord(ctx, []Intent{f.intent(t, 30)})
	if !errors.Is(errs[0], ErrSeqExhausted) {
		t.Fatalf("at 2^53-1: err = %v, want ErrSeqExhausted", errs[0])
	}
	if n := counter(t, rdb, f); n != 1<<53-1 {
		t.Errorf("counter moved to %d on refusal", n)
	}
}

// Reserve → Record → MarkCommitted, with the failure and retry edges of each step.
func TestCommitStateMachine(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 300)
	key := commitKey(in.Key)
	r, err := s.Reserve(ctx, in)
	if err != nil || !r.Fresh || r.State != StateReserved || r.ReservedAtMs != in.NowMs {
		t.Fatalf("Reserve = %+v, %v", r, err)
	}
	if rdb.Exists(ctx, string(appendNumKey(nil, newConvKeys(f.tenant, f.conv).hrec, uint64(r.Seq)))).Val() != 0 {
		t.Fatal("Reserve wrote history")
	}
	if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: time.Now().UnixMilli()}}); !errors.Is(errs[0], ErrNotRecorded) {
		t.Fatalf("MarkCommitted on R: %v, want ErrNotRecorded", errs[0])
	}
	// A fused retry of the same request (another message_id, as the writer mints one per call)
	// finishes the RESERVED commit: the stored intent is recorded, nothing is reserved again.
	retry := in
	retry.MessageID = f.intent(t, 1).MessageID
	if c := reserveOne(t, ctx, s, retry); c.Fresh || c.State != StateRecorded || c.Seq != r.Seq ||
		c.MessageID != in.MessageID || !bytes.Equal(c.Record, r.Record) {
		t.Fatalf("fused retry on R = %+v", c)
	}
	if n := counter(t, rdb, f); n != uint64(r.Seq) {
		t.Fatalf("counter = %d after the fused retry, want %d", n, r.Seq)
	}
	for range 2 { // Record is idempotent
		d, err := s.Record(ctx, in.Key)
		if err != nil || d.State != StateRecorded || d.Seq != r.Seq || !bytes.Equal(d.Record, r.Record) {
			t.Fatalf("Record = %+v, %v", d, err)
		}
	}
	cat := time.Now().UnixMilli()
	for i := range 2 {
		if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: cat + int64(i)*1000}}); errs[0] != nil {
			t.Fatalf("MarkCommitted #%d: %v", i, errs[0])
		}
	}
	c, found, err := s.LoadCommit(ctx, in.Key)
	if err != nil || !found || c.State != StateCommitted || c.CommittedAtMs != cat || c.Record != nil ||
		c.Seq != r.Seq || c.MessageID != in.MessageID || c.Identity != in.Identity {
		t.Fatalf("LoadCommit = %+v, %v, %v; want committed at the first cat", c, found, err)
	}
	fields := rdb.HKeys(ctx, key).Val()
	if strings.Join(slices.Sorted(slices.Values(fields)), ",") != "cat,cid,idn,mid,seq,st" {
		t.Errorf("committed hash fields = %v, want only the ACK-replay fields", fields)
	}
	if enc := rdb.ObjectEncoding(ctx, key).Val(); enc != "listpack" {
		t.Errorf("committed hash encoding = %s, want listpack (rebuilt, not HDEL'd)", enc)
	}
	ttl := rdb.PTTL(ctx, key).Val()
	if ttl > contract.IdempotencyWindow || ttl < contract.IdempotencyWindow-time.Minute {
		t.Errorf("PTTL = %v, want ≈ %v", ttl, contract.IdempotencyWindow)
	}
	if err := rdb.ZScore(ctx, pendingKey, key).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("recovery index still holds the committed key (err %v)", err)
	}
	// A replay of the same request after COMMITTED returns the coordinates for the ACK.
	if c := reserveOne(t, ctx, s, in); c.Fresh || c.State != StateCommitted || c.Seq != r.Seq {
		t.Fatalf("replay after C = %+v", c)
	}
	if _, err := s.Record(ctx, CommitKey{Tenant: f.tenant, Sender: f.sender, ClientMessageID: contract.ClientMessageID(randU128(t)), Conversation: f.conv}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Record of an unknown key: %v, want ErrNotFound", err)
	}
}

// A history record above the counter (the counter went back, for example after data loss) makes
// both reserve scripts refuse before their first write: no commit, no seq consumed.
func TestReserveRefusesTakenHistorySlot(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 20)
	rdb.Set(ctx, string(appendNumKey(nil, newConvKeys(f.tenant, f.conv).hrec, 1)), "a record from before", 0)
	if _, errs := s.ReserveAndRecord(ctx, []Intent{in}); !errors.Is(errs[0], ErrCorrupt) {
		t.Errorf("ReserveAndRecord: %v, want ErrCorrupt", errs[0])
	}
	if _, err := s.Reserve(ctx, in); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Reserve: %v, want ErrCorrupt", err)
	}
	if n := counter(t, rdb, f); n != 0 || rdb.Exists(ctx, commitKey(in.Key), ownerKey(in.Key)).Val() != 0 {
		t.Errorf("a refused reserve wrote: counter %d, commit or owner present", n)
	}
}

// MarkCommitted over more commits than one mark_committed.lua call holds, with a missing and a
// reserved-only commit among them: each error lands on its own request, every other commit is
// COMMITTED, and marking the batch again keeps each original committed_at.
func TestMarkCommittedBatches(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	cat := time.Now().UnixMilli()
	var reqs []MarkRequest
	for range markBatchMax + 9 {
		in := f.intent(t, 20)
		reserveOne(t, ctx, s, in)
		reqs = append(reqs, MarkRequest{Key: in.Key, CommittedAtMs: cat})
	}
	missing, reserved := f.intent(t, 20), f.intent(t, 20)
	if _, err := s.Reserve(ctx, reserved); err != nil {
		t.Fatal(err)
	}
	const atMissing, atReserved = 3, markBatchMax + 2
	reqs = slices.Insert(reqs, atMissing, MarkRequest{Key: missing.Key, CommittedAtMs: cat})
	reqs = slices.Insert(reqs, atReserved, MarkRequest{Key: reserved.Key, CommittedAtMs: cat})
	for _, round := range []int64{0, 999} {
		for i := range reqs {
			reqs[i].CommittedAtMs = cat + round
		}
		for i, err := range s.MarkCommitted(ctx, reqs) {
			switch i {
			case atMissing:
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("round %d: missing commit: %v, want ErrNotFound", round, err)
				}
			case atReserved:
				if !errors.Is(err, ErrNotRecorded) {
					t.Fatalf("round %d: reserved commit: %v, want ErrNotRecorded", round, err)
				}
			default:
				if err != nil {
					t.Fatalf("round %d: commit %d: %v", round, i, err)
				}
				c, ok, lerr := s.LoadCommit(ctx, reqs[i].Key)
				if lerr != nil || !ok || c.State != StateCommitted || c.CommittedAtMs != cat {
					t.Fatalf("round %d: commit %d = %+v %v %v, want COMMITTED at %d", round, i, c, ok, lerr, cat)
				}
			}
		}
	}
}
