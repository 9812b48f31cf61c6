package archiver

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// backfillDB is the core Redis database of the backfill test: TrimHot trims every commit bucket,
// so the test keeps its hot tier to itself.
const backfillDB = 10

func commitHot(t *testing.T, hot *msgstore.Store, conv contract.ConversationID, sender contract.UserID, n int) {
	t.Helper()
	for i := range n {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		cmid, _ := contract.U128FromBytes(b[:])
		mid, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), uint32(i), 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		tb, cb, mb := testTenant.Bytes(), conv.Bytes(), mid.Bytes()
		rec, err := proto.Marshal(&internalv1.MessageRecord{TenantId: tb[:], ConversationId: cb[:], ConversationKind: 1,
			MessageId: mb[:], SenderUserId: uint64(sender), ClientMessageId: b[:], MessageType: 1, Body: []byte("old"),
			CreatedAtMs: time.Now().UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		in := msgstore.Intent{Key: msgstore.CommitKey{Tenant: testTenant, Sender: sender, ClientMessageID: contract.ClientMessageID(cmid),
			Conversation: conv}, MessageID: mid, Record: rec, NowMs: time.Now().UnixMilli()}
		copy(in.Identity[:], b[:])
		cs, errs := hot.ReserveAndRecord(testCtx(t), []msgstore.Intent{in})
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		if e := hot.MarkCommitted(testCtx(t), []msgstore.MarkRequest{{Key: cs[0].Key, CommittedAtMs: time.Now().UnixMilli()}}); e[0] != nil {
			t.Fatal(e[0])
		}
	}
}

// History from before the trim existed (hot records without trim candidates) is never trimmed
// and holds nothing of the archive; the backfill archives it, then registers it, idempotently,
// after which the trim removes it and the history reads whole from the archive.
func TestBackfillArchivesThenRegistersOldHotHistory(t *testing.T) {
	ctx := testCtx(t)
	cfg := testConfig(t, privateOutbox(t))
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore, DB: backfillDB})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hot := msgstore.New(rdb)
	convs := []contract.ConversationID{contract.DirectConversationID(testTenant, 501, 502), contract.DirectConversationID(testTenant, 503, 504)}
	for i, c := range convs {
		commitHot(t, hot, c, contract.UserID(501+2*i), 25)
	}
	// Before the trim existed: no candidates.
	cands, _ := rdb.Keys(ctx, "qim:htrim:*").Result()
	if len(cands) == 0 {
		t.Fatal("no trim candidates to remove")
	}
	rdb.Del(ctx, cands...)
	if r, err := hot.TrimHot(ctx, time.Now().UnixMilli()+1, 100); err != nil || r.Trimmed != 0 {
		t.Fatalf("trim before the backfill = %+v, %v; want nothing trimmed", r, err)
	}
	bc := BackfillConfig{RedisAddr: itest.Endpoints(t).RedisCore, RedisDB: backfillDB, ScanCount: 7,
		CQL: MigrateConfig{Hosts: cfg.CQLHosts, Keyspace: cfg.CQLKeyspace}}
	res, err := Backfill(ctx, bc)
	if err != nil || res.Scanned != 50 || res.Registered != 50 {
		t.Fatalf("backfill = %+v, %v; want 50 scanned and registered", res, err)
	}
	if res, err := Backfill(ctx, bc); err != nil || res.Scanned != 50 || res.Registered != 0 {
		t.Fatalf("second backfill = %+v, %v; want 50 scanned, 0 newly registered", res, err)
	}
	if r, err := hot.TrimHot(ctx, time.Now().UnixMilli()+1, 100); err != nil || r.Trimmed != 50 {
		t.Fatalf("trim after the backfill = %+v, %v; want all 50 trimmed", r, err)
	}
	st, err := cqlstore.Open(ctx, cqlstore.Config{Hosts: cfg.CQLHosts, Keyspace: cfg.CQLKeyspace})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tiered := msgstore.New(rdb, msgstore.WithArchive(cqlstore.HistoryTier(st)))
	for _, c := range convs {
		p, err := tiered.HistoryPage(ctx, msgstore.HistoryQuery{Tenant: testTenant, Conversation: c, Direction: msgstore.Newer, Limit: 100})
		if err != nil || len(p.Records) != 25 {
			t.Fatalf("history of a backfilled, trimmed conversation: %d records, %v; want 25", len(p.Records), err)
		}
	}
}
