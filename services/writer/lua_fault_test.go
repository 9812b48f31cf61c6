//go:build failpoints

package writer

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/luascript"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// faultDB is the core Redis database this test flushes (msgstore's matrix uses 11, identity's 13).
const faultDB = 14

// TestLuaFaultRecoveryFinishesMark is the service side of the "Lua script fault" cell for
// mark_committed.lua: the writer does not retry a failed mark itself (the client's retry of the
// send finds the commit COMMITTED and replays the ACK), so a mark that died after any of its
// writes is finished by the recovery loop, which must leave exactly the keyspace of a fault-free
// mark. After write 1 (the shrunk hash built, not yet renamed) the commit is still RECORDED: the
// loop produces it again (a duplicate the dispatch identity converges) and marks it, consuming
// the shrunk key; after writes 2 to 5 it is COMMITTED and the loop only marks it again.
//
// Run: go test -tags failpoints -run TestLuaFault ./services/...
func TestLuaFaultRecoveryFinishesMark(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore, DB: faultDB})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	store := msgstore.New(rdb)
	out := &ackingProducer{}
	c := newCommitter(store, out, nil, newMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)), contract.MailboxShardsDefault, 1, 1)

	now := time.Now().UnixMilli()
	c.now = func() time.Time { return time.UnixMilli(now) } // the loop's mark uses the control's committed_at
	in := faultIntent(t, now-1000)                          // reserved before the recovery horizon (grace 0)
	mark := []msgstore.MarkRequest{{Key: in.Key, CommittedAtMs: now}}
	run := func(k int) luascripttest.Keyspace {
		t.Helper()
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, errs := store.ReserveAndRecord(ctx, []msgstore.Intent{in}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if k == 0 {
			if err := store.MarkCommitted(ctx, mark)[0]; err != nil {
				t.Fatal(err)
			}
		} else {
			fctx := luascript.WithFault(ctx, &luascript.Fault{Script: "mark_committed.lua", After: k})
			if err := store.MarkCommitted(fctx, mark)[0]; !luascript.IsInjectedFault(err) {
				t.Fatalf("k=%d: mark: %v, want the injected fault", k, err)
			}
			if _, err := c.recoverOnce(ctx, 0); err != nil {
				t.Fatalf("k=%d: recovery: %v", k, err)
			}
		}
		ks, err := luascripttest.Dump(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	control := run(0)
	for k := 1; k <= 5; k++ {
		produced := out.n.Load()
		if d := luascripttest.Diff(control, run(k), 5*time.Second); len(d) > 0 {
			t.Errorf("mark died after write %d; after recovery, against a fault-free mark:\n%s", k, strings.Join(d, "\n"))
		}
		want := int64(0) // COMMITTED: nothing to produce
		if k == 1 {
			want = 1 // still RECORDED
		}
		if got := out.n.Load() - produced; got != want {
			t.Errorf("mark died after write %d: recovery produced %d records, want %d", k, got, want)
		}
	}
}

// ackingProducer acknowledges every record at once and counts them.
type ackingProducer struct{ n atomic.Int64 }

func (p *ackingProducer) MaxRecordBytes() int { return 1_000_000 }

func (p *ackingProducer) Produce(_ context.Context, _, _ []byte, done func(int64, error)) {
	done(p.n.Add(1), nil)
}

func (p *ackingProducer) Ready(context.Context) error { return nil }

// faultIntent is a valid intent of a fresh conversation reserved at nowMs. The store takes any
// record bytes (the script appends conversation_seq to them); this one carries what the recovery
// loop reads back to build the envelope: sender and direct peer.
func faultIntent(t *testing.T, nowMs int64) msgstore.Intent {
	t.Helper()
	u := func() contract.U128 {
		var b [16]byte
		_, _ = rand.Read(b[:])
		b[15] |= 1
		v, _ := contract.U128FromBytes(b[:])
		return v
	}
	tenant := u()
	conv := contract.DirectConversationID(tenant, 42, 43) // the record names 42 and 43
	mid, err := contract.NewMessageID(uint64(nowMs), 1, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := proto.Marshal(&internalv1.MessageRecord{SenderUserId: 42, DirectPeerUserId: 43, Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	in := msgstore.Intent{
		Key:       msgstore.CommitKey{Tenant: tenant, Sender: 42, ClientMessageID: contract.ClientMessageID(u()), Conversation: conv},
		MessageID: mid, Record: rec, NowMs: nowMs,
	}
	copy(in.Identity[:], "QIMD-fault-test")
	return in
}
