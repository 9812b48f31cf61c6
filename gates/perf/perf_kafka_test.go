package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/qim-dev/qim/gates"
)

// metricsServer serves body as a service's /metrics.
func metricsServer(t *testing.T, body string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

const kafkaFamily = "# TYPE qim_kafka_requests_total counter\n"

func TestKafkaRequestsPerMessage(t *testing.T) {
	ctx := context.Background()
	writer := metricsServer(t, kafkaFamily+`qim_kafka_requests_total{api="Produce",client="outbox"} 300`+"\n"+
		`qim_kafka_requests_total{api="Metadata",client="outbox"} 2`+"\n")
	mailbox := metricsServer(t, kafkaFamily+`qim_kafka_requests_total{api="Fetch",client="mailbox"} 500`+"\n")
	after, err := snapKafkaRequests(ctx, map[string]string{"writer": writer, "mailbox": mailbox})
	if err != nil {
		t.Fatal(err)
	}
	if after["writer"]["outbox/Produce"] != 300 || after["mailbox"]["mailbox/Fetch"] != 500 {
		t.Fatalf("snapshot %v", after)
	}
	before := kafkaRequests{"writer": {"outbox/Produce": 100, "outbox/Metadata": 2}, "mailbox": {"mailbox/Fetch": 100}}
	r := &gates.Result{}
	line := kafkaPerMessage(r, "step_500_", before, after, 200)
	want := map[string]float64{"step_500_kafka_requests_per_msg": 3, "step_500_kafka_requests_per_msg_api_Fetch": 2,
		"step_500_kafka_requests_per_msg_api_Produce": 1, "step_500_kafka_requests_per_msg_svc_mailbox": 2}
	for k, v := range want {
		if r.Metrics[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, r.Metrics[k], v, r.Metrics)
		}
	}
	if _, ok := r.Metrics["step_500_kafka_requests_per_msg_api_Metadata"]; ok {
		t.Errorf("an API without requests in the run is reported: %v", r.Metrics)
	}
	if !strings.Contains(line, "3.00 (mailbox mailbox/Fetch 2.00, writer outbox/Produce 1.00)") {
		t.Errorf("line %q", line)
	}
	if line := kafkaPerMessage(&gates.Result{}, "", before, after, 0); !strings.Contains(line, "no ACKed") {
		t.Errorf("zero messages: %q", line)
	}
}

// A service without the counter (a renamed metric, an old build) must fail the snapshot, never
// count as zero requests.
func TestKafkaRequestsMissingCounterFails(t *testing.T) {
	other := metricsServer(t, "# TYPE qim_up gauge\nqim_up 1\n")
	if _, err := snapKafkaRequests(context.Background(), map[string]string{"fanout": other}); err == nil {
		t.Fatal("snapshot without the counter succeeded")
	}
}

func TestCapacityCallsRepeatTheCapacityStep(t *testing.T) {
	r := &gates.Result{}
	r.Metric("step_500_kafka_requests_per_msg", 3)
	r.Metric("step_500_redis_cmds_per_msg_redis-core", 20)
	r.Metric("step_500_end_to_end_p99_ms", 90)
	r.Metric("step_500_cpu_ms_per_msg_kafka", 0.25)
	r.Metric("step_1000_kafka_requests_per_msg", 2)
	r.Metric("step_1000_cpu_ms_per_msg_kafka", 0.5)
	capacityCalls(r, "step_500_")
	if r.Metrics["capacity_kafka_requests_per_msg"] != 3 || r.Metrics["capacity_redis_cmds_per_msg_redis-core"] != 20 ||
		r.Metrics["capacity_cpu_ms_per_msg_kafka"] != 0.25 {
		t.Fatalf("metrics %v", r.Metrics)
	}
	if _, ok := r.Metrics["capacity_end_to_end_p99_ms"]; ok {
		t.Fatalf("a latency was copied: %v", r.Metrics)
	}
}

// A counter snapshot that failed before or after the run fails a check naming the run; a good
// pair passes it for the measured run and adds nothing for a find-max step.
func TestRequestCountersCheck(t *testing.T) {
	good := func() *callCounts {
		return &callCounts{redis: redisCalls{"redis-core": {"evalsha": 10}}, kafka: kafkaRequests{"writer": {"outbox/Produce": 5}}}
	}
	broken := &callCounts{redis: redisCalls{"redis-core": {"evalsha": 10}}, err: errors.New("broker requests: archiver exports no qim_kafka_requests_total")}
	tests := []struct {
		name          string
		label         string
		before, after *callCounts
		want          string // the check recorded, "" for none
		pass          bool
	}{
		{"measured, both read", "", good(), good(), "request counters", true},
		{"measured, after failed", "", good(), broken, "request counters", false},
		{"measured, before failed", "", broken, good(), "request counters", false},
		{"measured, stack gone", "", good(), nil, "request counters", false},
		{"step, both read", "step 500 msg/s", good(), good(), "", true},
		{"step, before failed", "step 500 msg/s", broken, good(), "step 500 msg/s request counters", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &gates.Result{}
			recordCalls(&gates.Env{Progress: &bytes.Buffer{}}, r, "", tc.label, tc.before, tc.after, 100)
			if tc.want == "" {
				if len(r.Checks) != 0 {
					t.Fatalf("checks %+v, want none", r.Checks)
				}
				return
			}
			if len(r.Checks) != 1 || r.Checks[0].Name != tc.want || r.Checks[0].Passed != tc.pass {
				t.Fatalf("checks %+v, want one %q passed=%v", r.Checks, tc.want, tc.pass)
			}
			if !tc.pass && tc.before == broken && !strings.Contains(r.Checks[0].Detail, "archiver exports no") {
				t.Errorf("detail %q does not say why", r.Checks[0].Detail)
			}
		})
	}
}
