package msgstore

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// The idempotency window is the contract: once committed_at + 2 h has passed, the key is
// forgotten, and the same client_message_id — even with the same identity — creates a NEW message.
// The client's own dedup window (also 2 h) is what keeps a real client from resending that late.
func TestWindowExpiryForgetsKey(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	in := f.intent(t, 20)
	first := reserveOne(t, ctx, s, in)
	past := time.Now().Add(-contract.IdempotencyWindow - time.Second).UnixMilli()
	if errs := s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: past}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if _, found, err := s.LoadCommit(ctx, in.Key); err != nil || found {
		t.Fatalf("LoadCommit after the window: found %v, err %v; want forgotten", found, err)
	}
	in.MessageID = f.intent(t, 1).MessageID // the writer mints a new id for what is now a new send
	second := reserveOne(t, ctx, s, in)
	if !second.Fresh || second.MessageID == first.MessageID || second.Seq <= first.Seq {
		t.Fatalf("after the window: %+v, want a new message with a higher seq than %d", second, first.Seq)
	}
}

// Two Store instances on two connections reserve 200 messages into one conversation at once:
// every seq from 1 to 200 is issued exactly once.
func TestConcurrentReserveSeqsUnique(t *testing.T) {
	rdb1, rdb2 := coreClient(t), coreClient(t)
	ctx, f := testCtx(t), newFixture(t)
	stores := []*Store{New(rdb1), New(rdb2)}
	const perGroup, batch = 100, 10
	var mu sync.Mutex
	var seqs []uint64
	var wg sync.WaitGroup
	errc := make(chan error, 2*perGroup)
	for g := range 2 {
		for w := range perGroup / batch {
			wg.Add(1)
			go func(s *Store) {
				defer wg.Done()
				intents := make([]Intent, batch)
				for i := range intents {
					intents[i] = f.intent(t, 40)
				}
				cs, errs := s.ReserveAndRecord(ctx, intents)
				mu.Lock()
				defer mu.Unlock()
				for i := range cs {
					if errs[i] != nil {
						errc <- errs[i]
						continue
					}
					seqs = append(seqs, uint64(cs[i].Seq))
				}
			}(stores[(g+w)%2])
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("seqs[%d] = %d; want exactly 1..200 (got %d seqs)", i, s, len(seqs))
		}
	}
	if len(seqs) != 2*perGroup {
		t.Fatalf("%d seqs, want %d", len(seqs), 2*perGroup)
	}
}

// After SCRIPT FLUSH (a restarted Redis) the store reloads its scripts and the batch succeeds.
func TestNoScriptReloads(t *testing.T) {
	rdb := coreClient(t)
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	intents := []Intent{f.intent(t, 10), f.intent(t, 10), f.intent(t, 10)}
	cs, errs := s.ReserveAndRecord(ctx, intents)
	for i := range cs {
		if errs[i] != nil || uint64(cs[i].Seq) != uint64(i+1) {
			t.Fatalf("item %d after SCRIPT FLUSH: %+v, %v", i, cs[i], errs[i])
		}
	}
}

// A transport failure fails every item of the batch and reports no result as success.
func TestTransportErrorFailsWholeBatch(t *testing.T) {
	ep := coreClient(t).Options().Addr
	rdb := redis.NewClient(&redis.Options{Addr: ep})
	_ = rdb.Close()
	s, ctx, f := New(rdb), testCtx(t), newFixture(t)
	_, errs := s.ReserveAndRecord(ctx, []Intent{f.intent(t, 1), f.intent(t, 1)})
	for i, err := range errs {
		if err == nil || errors.Is(err, ErrInvalidArgument) {
			t.Errorf("item %d: err = %v, want a transport error", i, err)
		}
	}
}
