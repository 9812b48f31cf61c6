package commitlog

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Requests of each client are counted under its own role and the API they used: a produced
// batch shows up as Produce of the dispatch producer, reading it back as Fetch of the consumer,
// and an offset commit as OffsetCommit of the admin client; a client without metrics counts
// nothing.
func TestRequestMetricsCountByClientAndAPI(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	reg := obs.NewRegistry("commitlog-test")
	m := NewRequestMetrics(reg)
	count := func(client, api string) float64 {
		return testutil.ToFloat64(m.requests.WithLabelValues(client, api))
	}
	d := newDispatch(t, DispatchConfig{Brokers: ep.KafkaBrokers, ClientID: "qim-test-dispatch", Requests: m})
	recs := []Record{{Partition: 1, Key: messageKey(t, runID(t), 0), Value: []byte("counted")}}
	if err := d.ProduceBatch(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if n := count("qim-test-dispatch", "Produce"); n < 1 {
		t.Fatalf("Produce requests of the dispatch producer = %v, want ≥ 1", n)
	}
	c, err := NewPartitionConsumer(ep.KafkaBrokers, contract.TopicDispatch, map[int32]int64{1: recs[0].Offset},
		WithClientID("qim-test-consumer"), WithRequestMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pollUntil(t, ctx, c, 1)
	if n := count("qim-test-consumer", "Fetch"); n < 1 {
		t.Fatalf("Fetch requests of the consumer = %v, want ≥ 1", n)
	}
	a, err := NewAdmin(ep.KafkaBrokers, AdminRequests(m))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	store, err := NewOffsetStore(a, uniqueName(t, "qim-test-group"), contract.TopicDispatch)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, 1, recs[0].Offset+1); err != nil {
		t.Fatal(err)
	}
	if n := count(defaultAdminClientID, "OffsetCommit"); n < 1 {
		t.Fatalf("OffsetCommit requests of the admin client = %v, want ≥ 1", n)
	}
	plain := newDispatch(t, DispatchConfig{Brokers: ep.KafkaBrokers, ClientID: "qim-test-uncounted"})
	if err := plain.ProduceBatch(ctx, []Record{{Partition: 1, Value: []byte("not counted")}}); err != nil {
		t.Fatal(err)
	}
	if n := count("qim-test-uncounted", "Produce"); n != 0 {
		t.Fatalf("a client without metrics counted %v requests", n)
	}
}
