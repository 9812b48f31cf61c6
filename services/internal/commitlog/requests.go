package commitlog

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qim-dev/qim/services/internal/obs"
)

// RequestMetrics counts the Kafka requests a process writes to brokers, by client role (the
// Kafka client.id) and API (Produce, Fetch, OffsetCommit, ...), as
// qim_kafka_requests_total{client, api}.
//
// Why: on the project's machines the broker's CPU grows with requests, not with bytes, so
// requests per message is the number to watch when tuning batching; the broker's own request
// metrics need JMX, which neither Redpanda nor our harness exposes the same way.
//
// How: a franz-go OnBrokerWrite hook per client; requests that failed to be written are not
// counted. Cardinality is bounded: a handful of roles times the APIs a client uses.
type RequestMetrics struct {
	requests *prometheus.CounterVec
}

// NewRequestMetrics registers the counter in reg (asking twice returns the same counter).
func NewRequestMetrics(reg *obs.Registry) *RequestMetrics {
	return &RequestMetrics{requests: reg.CounterVec("qim_kafka_requests_total",
		"Kafka requests written to brokers, by client role (client.id) and API.", "client", "api")}
}

// opts returns the kgo option that counts client's requests; none for a nil receiver.
func (m *RequestMetrics) opts(client string) []kgo.Opt {
	if m == nil {
		return nil
	}
	return []kgo.Opt{kgo.WithHooks(requestHook{m: m, client: client})}
}

type requestHook struct {
	m      *RequestMetrics
	client string
}

var _ kgo.HookBrokerWrite = requestHook{}

func (h requestHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	h.m.requests.WithLabelValues(h.client, kmsg.NameForKey(key)).Inc()
}
