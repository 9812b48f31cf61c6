package writer

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
)

func TestTrimCutoff(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		name           string
		window, margin time.Duration
		wm             int64
		haveWM         bool
		pending        int64
		havePending    bool
		cutoff         int64
		held           string
	}{
		{"no watermark trims nothing", 0, 0, 0, false, 0, false, 0, heldNoWatermark},
		{"the hot window bounds it", 100 * time.Second, 0, now, true, 0, false, now - 100_000, ""},
		{"the watermark less the margin bounds it", 0, 10 * time.Second, 500_000, true, 0, false, 490_000, ""},
		{"an old pending commit bounds it", 0, time.Second, now, true, 300_000, true, 299_000, ""},
		{"a recent pending commit does not", 0, time.Second, 500_000, true, 900_000, true, 499_000, ""},
		{"a cutoff before time begins trims nothing", 0, time.Hour, now, true, 0, false, 0, heldNothingDue},
	} {
		c, held := trimCutoff(now, tc.window, tc.margin, tc.wm, tc.haveWM, tc.pending, tc.havePending)
		if c != tc.cutoff || held != tc.held {
			t.Errorf("%s: trimCutoff = %d, %q; want %d, %q", tc.name, c, held, tc.cutoff, tc.held)
		}
	}
}

// trimRig is a hot store in a Redis database of its own: TrimHot trims every commit bucket, and
// the package's other tests must not lose their history to this one.
type trimRig struct {
	rdb    *redis.Client
	store  *msgstore.Store
	trim   *hotTrim
	tenant contract.TenantID
	conv   contract.ConversationID
	sender contract.UserID
	now    time.Time
}

func newTrimRig(t *testing.T) *trimRig {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore, DB: 9})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	r := &trimRig{rdb: rdb, store: msgstore.New(rdb), tenant: contract.TenantID{Hi: 3, Lo: 4}, sender: 11, now: time.Now()}
	r.conv = contract.DirectConversationID(r.tenant, r.sender, 12)
	r.trim = &hotTrim{store: r.store, group: "qim-archiver-test", margin: 0, window: 0, interval: time.Second,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return r.now },
		m: newTrimMetrics(obs.NewRegistry("writer"))}
	return r
}

func (r *trimRig) intent(t *testing.T, nowMs int64) msgstore.Intent {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	cmid, _ := contract.U128FromBytes(b[:])
	mid, err := contract.NewMessageID(uint64(nowMs), uint32(b[0]), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	tb, cb, mb := r.tenant.Bytes(), r.conv.Bytes(), mid.Bytes()
	rec, err := proto.Marshal(&internalv1.MessageRecord{TenantId: tb[:], ConversationId: cb[:], ConversationKind: 1,
		MessageId: mb[:], SenderUserId: uint64(r.sender), ClientMessageId: b[:], MessageType: 1, Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	in := msgstore.Intent{Key: msgstore.CommitKey{Tenant: r.tenant, Sender: r.sender, ClientMessageID: contract.ClientMessageID(cmid),
		Conversation: r.conv}, MessageID: mid, Record: rec, NowMs: nowMs}
	copy(in.Identity[:], b[:])
	return in
}

// commit commits one message at committed_at = atMs and returns its seq.
func (r *trimRig) commit(t *testing.T, atMs int64) uint64 {
	cs, errs := r.store.ReserveAndRecord(context.Background(), []msgstore.Intent{r.intent(t, atMs)})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if e := r.store.MarkCommitted(context.Background(), []msgstore.MarkRequest{{Key: cs[0].Key, CommittedAtMs: atMs}}); e[0] != nil {
		t.Fatal(e[0])
	}
	return uint64(cs[0].Seq)
}

// hot counts the conversation's trim candidates: its messages still in the hot tier.
func (r *trimRig) hot(t *testing.T) int {
	n, err := r.rdb.ZCard(context.Background(), "qim:htrim:"+contract.ConversationCommitBucket(r.tenant, r.conv).KeyTag()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func (r *trimRig) floor(t *testing.T) uint64 {
	f, err := r.store.HotFloor(context.Background(), r.tenant, r.conv)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (r *trimRig) tick(t *testing.T) {
	if err := r.trim.once(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The trim never passes the archive watermark: without one nothing goes; with one, exactly what
// was committed up to it goes; while the archiver is stopped (T stays), nothing more goes however
// much time passes; an old unfinished commit holds it too.
func TestHotTrimNeverPassesTheArchiveWatermark(t *testing.T) {
	r := newTrimRig(t)
	base := r.now.Add(-time.Hour).UnixMilli()
	seqs := make([]uint64, 10)
	for i := range seqs {
		seqs[i] = r.commit(t, base+int64(i)*1000)
	}
	r.tick(t)
	if n := r.hot(t); n != 10 || r.floor(t) != 0 || testutil.ToFloat64(r.trim.m.held.WithLabelValues(heldNoWatermark)) != 1 {
		t.Fatalf("without a watermark: %d candidates left, floor %d; want all 10 kept and the trim held", n, r.floor(t))
	}
	// The archiver has archived everything committed before message 6.
	r.rdb.ZAdd(context.Background(), msgstore.ArchiveWatermarkKey, redis.Z{Score: float64(base + 5500), Member: r.trim.group})
	r.tick(t)
	if n, f := r.hot(t), r.floor(t); n != 4 || f != seqs[5] {
		t.Fatalf("watermark after message 5: %d candidates left, floor %d; want 4 and %d", n, f, seqs[5])
	}
	// The archiver stops: T stays while messages and time go on.
	for i := range 5 {
		r.commit(t, base+20_000+int64(i))
	}
	for range 3 {
		r.now = r.now.Add(24 * time.Hour)
		r.tick(t)
	}
	if n, f := r.hot(t), r.floor(t); n != 9 || f != seqs[5] {
		t.Fatalf("archiver stopped: %d candidates left, floor %d; want 9 and %d (nothing past T)", n, f, seqs[5])
	}
	// It catches up, but a commit reserved after message 7 and still unfinished holds the trim there.
	if _, err := r.store.Reserve(context.Background(), r.intent(t, base+7500)); err != nil {
		t.Fatal(err)
	}
	r.rdb.ZAdd(context.Background(), msgstore.ArchiveWatermarkKey, redis.Z{Score: float64(r.now.UnixMilli()), Member: r.trim.group})
	r.tick(t)
	if n, f := r.hot(t), r.floor(t); n != 7 || f != seqs[7] {
		t.Fatalf("pending commit at message 7.5: %d candidates left, floor %d; want 7 and %d", n, f, seqs[7])
	}
	if got := testutil.ToFloat64(r.trim.m.trimmed); got != 8 {
		t.Fatalf("qim_writer_history_trimmed_total = %v, want 8", got)
	}
}
