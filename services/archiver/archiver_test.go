package archiver

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

// archivedSeqs reads back conversation conv's archived seqs, failing on any read error.
func archivedSeqs(t *testing.T, st *cqlstore.Store, conv uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	for after, upTo := uint64(0), uint64(1<<20); after < upTo; {
		got, scanned, err := st.Range(testCtx(t), testTenant, conversationOf(conv), after, upTo, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			seqs = append(seqs, a.Seq)
		}
		after = scanned
	}
	return seqs
}

func wantContiguous(t *testing.T, conv uint64, seqs []uint64, n int) {
	t.Helper()
	if len(seqs) != n {
		t.Fatalf("conversation %d: %d archived, want %d", conv, len(seqs), n)
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("conversation %d: archived seq %d at %d, want %d", conv, s, i, i+1)
		}
	}
}

func TestArchiverArchivesEveryCommittedRecordThenPublishesTheWatermark(t *testing.T) {
	topic := privateOutbox(t)
	cfg := testConfig(t, topic)
	const n, convs = 1500, 7
	before := time.Now()
	produceMessages(t, topic, n, convs)
	r := start(t, cfg)
	r.waitPosition(t, n)
	st := openStore(t, cfg)
	for c := range uint64(convs) {
		wantContiguous(t, c, archivedSeqs(t, st, c), n/convs+map[bool]int{true: 1}[int(c) < n%convs])
	}
	if got := metricValue(t, r.svc, "qim_archiver_rows_total"); got != n {
		t.Fatalf("rows_total = %v, want %d", got, n)
	}
	// The perf gate sums every Kafka client's requests per message; an archiver that counts
	// none would drop out of that figure (gates/perf/perf_kafka.go).
	if got := metricValue(t, r.svc, "qim_kafka_requests_total"); got == 0 {
		t.Fatal("qim_kafka_requests_total = 0 after archiving: the archiver's Kafka clients are not counted")
	}
	// T is published once the position reached a high watermark listed after T was read, so it
	// is at least the time before the records were produced, and never in the future.
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := coreRedis(t).ZScore(testCtx(t), watermarkKey, cfg.Group).Result()
		if err == nil && int64(v) >= before.UnixMilli() {
			if int64(v) > time.Now().UnixMilli() {
				t.Fatalf("watermark %v is in the future", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watermark = %v (%v), want >= %d within 15 s", v, err, before.UnixMilli())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// A restart resumes at the committed position: it archives only what came after.
	r2 := start(t, cfg)
	r2.waitPosition(t, n)
	produceMessages(t, topic, convs, convs) // seq 1 again in each conversation: a replayed write, same position
	r2.waitPosition(t, n+convs)
	if got := metricValue(t, r2.svc, "qim_archiver_rows_total"); got != convs {
		t.Fatalf("restarted archiver wrote %v rows, want %d", got, convs)
	}
	if r2.svc.WatermarkMs() < before.UnixMilli() {
		t.Fatalf("restarted archiver reads watermark %d, want the published one", r2.svc.WatermarkMs())
	}
}

// flakyStore fails the first n Puts and records the committed position each Put saw.
type flakyStore struct {
	inner    rowStore
	failLeft atomic.Int64
	svc      *Service
	sawAbove atomic.Bool
}

func (f *flakyStore) Put(ctx context.Context, rows []cqlstore.Row, now time.Time) (cqlstore.PutResult, error) {
	if f.svc.Position() != 0 {
		f.sawAbove.Store(true)
	}
	if f.failLeft.Add(-1) >= 0 {
		return cqlstore.PutResult{}, errors.New("injected: CQL write timed out")
	}
	return f.inner.Put(ctx, rows, now)
}

func TestArchiverRetriesAFailedBatchAndNeverCommitsPastIt(t *testing.T) {
	topic := privateOutbox(t)
	cfg := testConfig(t, topic)
	produceMessages(t, topic, 20, 2)
	svc := newService(t, cfg)
	fs := &flakyStore{svc: svc}
	fs.failLeft.Store(3)
	svc.wrapStore = func(inner rowStore) rowStore { fs.inner = inner; return fs }
	r := runService(t, svc)
	r.waitPosition(t, 20)
	if fs.sawAbove.Load() {
		t.Fatal("the position moved while the first batch was still failing")
	}
	if got := metricValue(t, r.svc, "qim_archiver_failures_total"); got < 3 {
		t.Fatalf("failures_total = %v, want >= 3", got)
	}
	st := openStore(t, cfg)
	wantContiguous(t, 0, archivedSeqs(t, st, 0), 10)
	wantContiguous(t, 1, archivedSeqs(t, st, 1), 10)
}

func TestArchiverStopsAtAnUnarchivableRecordWithThePositionBelowIt(t *testing.T) {
	topic := privateOutbox(t)
	cfg := testConfig(t, topic)
	produceMessages(t, topic, 3, 1)
	r := start(t, cfg)
	r.waitPosition(t, 3)
	k, good := envelope(t, 0, 4, "after the bad one")
	produce(t, topic, [][]byte{k, k}, [][]byte{[]byte("not a CommittedEnvelope"), good})
	err := r.exited(t, 60*time.Second)
	var re *RecordError
	if !errors.As(err, &re) || re.Offset != 3 || !errors.Is(err, ErrUndecodable) {
		t.Fatalf("Run = %v, want *RecordError at offset 3 wrapping ErrUndecodable", err)
	}
	if r.svc.Position() != 3 || metricValue(t, r.svc, "qim_archiver_unarchivable_records_total") != 1 {
		t.Fatalf("position %d, unarchivable %v; want 3 and 1", r.svc.Position(), metricValue(t, r.svc, "qim_archiver_unarchivable_records_total"))
	}
	// The record after the bad one was not archived either: nothing at or after it moves.
	if seqs := archivedSeqs(t, openStore(t, cfg), 0); len(seqs) != 3 {
		t.Fatalf("archived %v, want seqs 1..3 only", seqs)
	}
}

func TestArchiverRefusesAStartTheLogCannotJustify(t *testing.T) {
	topic := privateOutbox(t)
	cfg := testConfig(t, topic)
	produceMessages(t, topic, 4, 1)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2, LeaderEpoch: -1})
	if resp, err := kafkaAdmin(t).DeleteRecords(testCtx(t), offs); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := newService(t, cfg).Run(ctx)
	var se *StartError
	var oor *commitlog.OffsetOutOfRangeError
	if !errors.As(err, &se) || !errors.As(err, &oor) || oor.Low != 2 || oor.HasCommitted {
		t.Fatalf("Run over a log starting at 2 with no position = %v, want StartError with OffsetOutOfRangeError{low 2}", err)
	}
	// An unmigrated keyspace is refused before anything is consumed.
	cfg.CQLKeyspace = "qim_never_migrated_" + randomHex(t, 4)
	if err := newService(t, cfg).Run(ctx); !errors.As(err, &se) {
		t.Fatalf("Run on an unmigrated keyspace = %v, want *StartError", err)
	}
}
