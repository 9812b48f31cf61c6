package obs

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
)

func TestCheckMetric(t *testing.T) {
	tests := []struct {
		name    string
		metric  string
		counter bool
		labels  []string
		refused string // "" = accepted; otherwise the refused label, or "-" for the name
	}{
		{"counter", "qim_fanout_batches_total", true, nil, ""},
		{"gauge with labels", "qim_mailbox_fifo_depth", false, []string{"shard"}, ""},
		{"no prefix", "fanout_batches_total", true, nil, "-"},
		{"other prefix", "im_send_total", true, nil, "-"},
		{"upper case", "qim_Send_total", true, nil, "-"},
		{"double underscore", "qim__send_total", true, nil, "-"},
		{"counter without _total", "qim_sends", true, nil, "-"},
		{"gauge with _total", "qim_depth_total", false, nil, "-"},
		{"user_id label", "qim_sends_total", true, []string{"user_id"}, "user_id"},
		{"message_id label", "qim_sends_total", true, []string{"shard", "message_id"}, "message_id"},
		{"conversation_id label", "qim_sends_total", true, []string{"conversation_id"}, "conversation_id"},
		{"client_message_id label", "qim_sends_total", true, []string{"client_message_id"}, "client_message_id"},
		{"device_id label", "qim_sends_total", true, []string{"device_id"}, "device_id"},
		{"token label", "qim_sends_total", true, []string{"token"}, "token"},
		{"suffixed id label", "qim_sends_total", true, []string{"sender_user_id"}, "sender_user_id"},
		{"suffixed token label", "qim_sends_total", true, []string{"access_token"}, "access_token"},
		{"service label is reserved", "qim_sends_total", true, []string{"service"}, "service"},
		{"bad label syntax", "qim_sends_total", true, []string{"Shard"}, "Shard"},
		{"duplicate label", "qim_sends_total", true, []string{"shard", "shard"}, "shard"},
		{"id-like but allowed", "qim_sends_total", true, []string{"opcode", "token_kind"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMetric(tc.metric, tc.counter, tc.labels...)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("CheckMetric = %v, want accepted", err)
				}
				return
			}
			var me *MetricError
			if !errors.As(err, &me) || !errors.Is(err, ErrMetric) {
				t.Fatalf("CheckMetric = %v, want *MetricError", err)
			}
			if want := strings.TrimPrefix(tc.refused, "-"); me.Label != want {
				t.Fatalf("refused label %q, want %q (%v)", me.Label, want, err)
			}
		})
	}
}

// mustPanicMetricError runs fn and returns the *MetricError it panicked with.
func mustPanicMetricError(t *testing.T, fn func()) (me *MetricError) {
	t.Helper()
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.As(err, &me) {
			t.Fatalf("panic value %v, want a *MetricError", r)
		}
	}()
	fn()
	return nil
}

func TestRegistryRefusesBadMetrics(t *testing.T) {
	r := NewRegistry("writer")
	if me := mustPanicMetricError(t, func() { r.Counter("writer_sends_total", "h") }); me.Label != "" {
		t.Fatalf("unprefixed name: %v", me)
	}
	if me := mustPanicMetricError(t, func() { r.CounterVec("qim_sends_total", "h", "user_id") }); me.Label != "user_id" {
		t.Fatalf("forbidden label: %v", me)
	}
	if me := mustPanicMetricError(t, func() { r.Histogram("qim_ack_latency_us", "h", nil) }); me == nil {
		t.Fatal("histogram without buckets accepted")
	}
	if me := mustPanicMetricError(t, func() { r.Invariant("qim_writer_dropped_total") }); me == nil {
		t.Fatal("invariant counter outside contract.InvariantCounters() accepted")
	}
	if me := mustPanicMetricError(t, func() { r.Invariant(contract.InvariantMailboxDispatchConflicts) }); me == nil {
		t.Fatal("another service's invariant counter accepted")
	}
}

func TestRegistryMetricsCarryServiceAndDedupe(t *testing.T) {
	r := NewRegistry("fanout")
	c := r.Counter("qim_fanout_batches_total", "batches")
	c.Add(2)
	if again := r.Counter("qim_fanout_batches_total", "batches"); again != c {
		t.Fatal("asking for the same counter twice returned a different one")
	}
	r.GaugeFunc("qim_fanout_buffered_records", "depth", func() float64 { return 7 })
	r.HistogramVec("qim_fanout_ack_wait_us", "wait", LatencyBucketsMicros, "outcome").WithLabelValues("ok").Observe(120)
	want := `
# HELP qim_fanout_batches_total batches
# TYPE qim_fanout_batches_total counter
qim_fanout_batches_total{service="fanout"} 2
# HELP qim_fanout_buffered_records depth
# TYPE qim_fanout_buffered_records gauge
qim_fanout_buffered_records{service="fanout"} 7
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), "qim_fanout_batches_total", "qim_fanout_buffered_records"); err != nil {
		t.Fatal(err)
	}
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sawGo bool
	for _, mf := range mfs {
		sawGo = sawGo || strings.HasPrefix(mf.GetName(), "go_")
	}
	if !sawGo {
		t.Fatal("Go runtime collector missing")
	}
}

func TestInvariantHealthy(t *testing.T) {
	r := NewRegistry("mailbox")
	a := r.Invariant(contract.InvariantMailboxWatermarkFenced)
	b := r.Invariant(contract.InvariantMailboxDispatchConflicts)
	if ok, bad := r.Healthy(); !ok || len(bad) != 0 {
		t.Fatalf("fresh invariants: Healthy() = %v, %v", ok, bad)
	}
	b.Inc()
	a.Add(3)
	ok, bad := r.Healthy()
	if ok || strings.Join(bad, ",") != "qim_mailbox_dispatch_conflicts_total,qim_mailbox_watermark_fenced_total" {
		t.Fatalf("Healthy() = %v, %v; want both counters named, sorted", ok, bad)
	}
	if r.Invariant(contract.InvariantMailboxWatermarkFenced) != a {
		t.Fatal("re-registering an invariant returned a different counter")
	}
	if got := strings.Join(r.InvariantNames(), ","); got != "qim_mailbox_dispatch_conflicts_total,qim_mailbox_watermark_fenced_total" {
		t.Fatalf("InvariantNames() = %s", got)
	}
}

// TestRegisterChecksCollectors: collectors built outside the helpers (a component's metrics
// struct) are checked and get the service label.
func TestRegisterChecksCollectors(t *testing.T) {
	r := NewRegistry("writer")
	ok := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "qim_writer_commit_stage_seconds", Help: "h",
		Buckets: prometheus.DefBuckets}, []string{"stage"})
	r.MustRegister(ok)
	ok.WithLabelValues("outbox").Observe(0.01)
	if n, err := testutil.GatherAndCount(r.Gatherer(), "qim_writer_commit_stage_seconds"); err != nil || n != 1 {
		t.Fatalf("registered histogram: %d series, %v", n, err)
	}
	mfs, _ := r.Gatherer().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "qim_writer_commit_stage_seconds" && mf.GetMetric()[0].GetLabel()[0].GetValue() != "writer" {
			t.Fatalf("service label missing: %v", mf.GetMetric()[0].GetLabel())
		}
	}
	tests := []struct {
		name string
		c    prometheus.Collector
	}{
		{"no prefix", prometheus.NewCounter(prometheus.CounterOpts{Name: "writer_commits_total", Help: "h"})},
		{"forbidden label", prometheus.NewCounterVec(prometheus.CounterOpts{Name: "qim_commits_total", Help: "h"}, []string{"conversation_id"})},
		{"forbidden const label", prometheus.NewCounter(prometheus.CounterOpts{Name: "qim_x_total", Help: "h",
			ConstLabels: prometheus.Labels{"device_id": "d,1=\"x\""}})},
	}
	for _, tc := range tests {
		if err := r.Register(tc.c); !errors.Is(err, ErrMetric) {
			t.Errorf("%s: Register = %v, want ErrMetric", tc.name, err)
		}
	}
}

// Every registry exports qim_build_info = 1 with the product version, so a scrape names the build.
func TestRegistryExportsBuildInfo(t *testing.T) {
	r := NewRegistry("writer")
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "qim_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["version"] != contract.ProductVersion || labels["service"] != "writer" ||
			labels["revision"] == "" || labels["go_version"] == "" {
			t.Fatalf("qim_build_info = %v %v", m.GetGauge().GetValue(), labels)
		}
		return
	}
	t.Fatal("no qim_build_info")
}
