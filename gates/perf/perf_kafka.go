package perf

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/svc"
)

// kafkaRequestsMetric counts the Kafka requests every service writes to the brokers, by client
// role and API (services/internal/commitlog/requests.go). The broker serves each written request
// once, so the sum over the services is the broker's request count without JMX, the same for
// Kafka and Redpanda; a build under A/B that lacks the counter reports no broker figure.
const kafkaRequestsMetric = "qim_kafka_requests_total"

// kafkaRequests is service → "client/api" → requests written, summed over the deployment.
type kafkaRequests map[string]map[string]float64

// kafkaClients are the /metrics addresses of the services of the deployment that speak Kafka:
// all but the RoomWriters (rooms touch no log, ADR-0034), the ConnectionNodes only when they
// publish qim.presence (a build from before it).
func kafkaClients(set *svc.Set) map[string]string {
	out := map[string]string{}
	for _, name := range set.Services() {
		service, _ := svc.ServiceOf(name)
		if service == svc.Room || service == svc.Gateway && !set.Presence() {
			continue
		}
		if addr, ok := set.Addrs.Metrics[name]; ok {
			out[name] = addr
		}
	}
	return out
}

// snapKafkaRequests scrapes every service (name → /metrics address). A service whose scrape
// fails or lacks the counter makes the snapshot fail: a partial count would read as fewer
// requests.
func snapKafkaRequests(ctx context.Context, metrics map[string]string) (kafkaRequests, error) {
	out := kafkaRequests{}
	for name, addr := range metrics {
		fams, err := svc.ScrapeMetrics(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("gates: scrape %s: %w", name, err)
		}
		f, ok := fams[kafkaRequestsMetric]
		if !ok {
			return nil, fmt.Errorf("gates: %s exports no %s", name, kafkaRequestsMetric)
		}
		out[name] = map[string]float64{}
		for _, m := range f.GetMetric() {
			var client, api string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "client":
					client = l.GetValue()
				case "api":
					api = l.GetValue()
				}
			}
			out[name][client+"/"+api] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// kafkaPerMessage records, from two snapshots around a run, the broker requests per ACKed
// message (metric kafka_requests_per_msg), by API (kafka_requests_per_msg_api_<api>) and by
// service (kafka_requests_per_msg_svc_<service>), and returns one line for people.
func kafkaPerMessage(r *gates.Result, prefix string, before, after kafkaRequests, acked int64) string {
	if acked <= 0 {
		return "no ACKed message: no broker requests per message"
	}
	byAPI, bySvc, byRole := map[string]float64{}, map[string]float64{}, map[string]float64{}
	var total float64
	for s, series := range after {
		for k, v := range series {
			d := v - before[s][k]
			if d <= 0 {
				continue
			}
			_, api, _ := strings.Cut(k, "/")
			byAPI[api] += d
			bySvc[s] += d
			byRole[s+" "+k] += d
			total += d
		}
	}
	n := float64(acked)
	r.Metric(prefix+"kafka_requests_per_msg", total/n)
	for api, d := range byAPI {
		r.Metric(prefix+"kafka_requests_per_msg_api_"+api, d/n)
	}
	for s, d := range bySvc {
		r.Metric(prefix+"kafka_requests_per_msg_svc_"+s, d/n)
	}
	return fmt.Sprintf("broker requests per ACKed message: %.2f (%s)", total/n, topShares(byRole, n, 5))
}

// topShares lists the largest entries of m divided by n, largest first.
func topShares(m map[string]float64, n float64, k int) string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, k)
	for i, key := range keys {
		if i == k {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", key, m[key]/n))
	}
	return strings.Join(parts, ", ")
}
