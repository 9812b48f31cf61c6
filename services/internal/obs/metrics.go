package obs

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/buildinfo"
)

// metricPrefix is the namespace every Q-IM metric carries (docs/architecture.md, invariant 15), so
// dashboards and the invariant gate can select Q-IM series without a list.
const metricPrefix = "qim_"

// serviceLabel is the constant label every qim_ metric of a Registry carries.
const serviceLabel = "service"

var (
	metricName  = regexp.MustCompile(`^qim_[a-z][a-z0-9_]*[a-z0-9]$`)
	labelName   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	serviceName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// forbiddenLabels are identifiers with one value per user, message, conversation, device or
// session. As label values they create a time series each: the metrics store grows without bound
// and the series leak who talked when. A label named like one of them, or ending in
// "_<one of them>" (sender_user_id, access_token), is refused.
var forbiddenLabels = []string{"user_id", "message_id", "conversation_id", "client_message_id", "device_id", "token"}

// ErrMetric is wrapped by every *MetricError.
var ErrMetric = errors.New("obs: metric refused")

// MetricError says which metric, and which label if any, broke the naming contract.
type MetricError struct {
	Name   string
	Label  string // empty when the name itself is refused
	Reason string
}

func (e *MetricError) Error() string {
	if e.Label != "" {
		return fmt.Sprintf("obs: metric %q label %q refused: %s", e.Name, e.Label, e.Reason)
	}
	return fmt.Sprintf("obs: metric %q refused: %s", e.Name, e.Reason)
}

func (e *MetricError) Unwrap() error { return ErrMetric }

// metricKind decides the suffix rule: counters end in _total, nothing else does.
type metricKind int

const (
	kindCounter metricKind = iota
	kindGauge
	kindHistogram
)

// CheckMetric validates a counter name (counter true) or another metric's name, and its label
// names, against the contract: qim_ prefix, lower snake case, _total exactly on counters, no
// high-cardinality identifiers as labels, no label named "service" (the Registry sets it).
func CheckMetric(name string, counter bool, labels ...string) error {
	kind := kindGauge
	if counter {
		kind = kindCounter
	}
	return checkMetric(name, kind, labels)
}

func checkMetric(name string, kind metricKind, labels []string) error {
	switch {
	case !strings.HasPrefix(name, metricPrefix):
		return &MetricError{Name: name, Reason: "name must start with " + metricPrefix}
	case !metricName.MatchString(name) || strings.Contains(name, "__"):
		return &MetricError{Name: name, Reason: "name must be lower snake case"}
	case kind == kindCounter && !strings.HasSuffix(name, "_total"):
		return &MetricError{Name: name, Reason: "a counter's name must end in _total"}
	case kind != kindCounter && strings.HasSuffix(name, "_total"):
		return &MetricError{Name: name, Reason: "only counters end in _total"}
	case kind == kindHistogram && (strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_sum")):
		return &MetricError{Name: name, Reason: "a histogram's name must not end in _bucket, _count or _sum"}
	}
	for i, l := range labels {
		if err := checkLabel(name, l); err != nil {
			return err
		}
		if slices.Contains(labels[:i], l) {
			return &MetricError{Name: name, Label: l, Reason: "duplicate label"}
		}
	}
	return nil
}

func checkLabel(metric, l string) error {
	if !labelName.MatchString(l) {
		return &MetricError{Name: metric, Label: l, Reason: "label names are lower snake case"}
	}
	if l == serviceLabel {
		return &MetricError{Name: metric, Label: l, Reason: "the registry sets the service label itself"}
	}
	for _, f := range forbiddenLabels {
		if l == f || strings.HasSuffix(l, "_"+f) {
			return &MetricError{Name: metric, Label: l, Reason: "high-cardinality identifiers are forbidden as labels"}
		}
	}
	return nil
}

// Registry is one service's Prometheus registry: the Go runtime and process collectors plus the
// service's qim_ metrics, each created through a helper that enforces the naming contract, and
// the always-zero invariant counters /healthz watches.
//
// Invariants: every metric created through it passes CheckMetric and carries service=<name>;
// a refused metric panics at construction (a programming error, caught by the first test that
// builds the component), never at scrape time; asking twice for the same metric returns the first
// one, so two components can share a counter; an invariant counter, once registered, is part of
// Healthy until the process exits.
//
// Rejected: prometheus.DefaultRegisterer. It is process-global, so the all-in-one binary's
// services would collide, and any library could add series that bypass the naming contract.
type Registry struct {
	service string
	reg     *prometheus.Registry

	mu         sync.Mutex
	invariants map[string]prometheus.Counter
}

// NewRegistry creates the registry of service (lower case, digits and dashes: "writer",
// "fanout"); an invalid service name panics.
func NewRegistry(service string) *Registry {
	if !serviceName.MatchString(service) {
		panic(fmt.Sprintf("obs: service name %q must be lower case letters, digits and dashes", service))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r := &Registry{service: service, reg: reg, invariants: map[string]prometheus.Counter{}}
	bi := buildinfo.Read()
	r.GaugeVec("qim_build_info", "Always 1: the build this process runs (version, VCS revision, Go version).",
		"version", "revision", "go_version").WithLabelValues(bi.Version, bi.Revision, bi.GoVersion).Set(1)
	return r
}

// Service is the value of the service label.
func (r *Registry) Service() string { return r.service }

// Gatherer is what /metrics serves.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

func (r *Registry) constLabels() prometheus.Labels { return prometheus.Labels{serviceLabel: r.service} }

// Counter returns the counter name (must end in _total).
func (r *Registry) Counter(name, help string) prometheus.Counter {
	mustCheck(name, kindCounter, nil)
	return register(r, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: r.constLabels()}))
}

// CounterVec returns the counter family name with the given labels.
func (r *Registry) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	mustCheck(name, kindCounter, labels)
	return register(r, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: r.constLabels()}, labels))
}

// Gauge returns the gauge name.
func (r *Registry) Gauge(name, help string) prometheus.Gauge {
	mustCheck(name, kindGauge, nil)
	return register(r, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: r.constLabels()}))
}

// GaugeVec returns the gauge family name with the given labels.
func (r *Registry) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	mustCheck(name, kindGauge, labels)
	return register(r, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: r.constLabels()}, labels))
}

// GaugeFunc registers a gauge read from fn at scrape time, for queue depths kept elsewhere
// (such as commitlog's BufferedRecords). fn must be cheap and safe for concurrent use.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) prometheus.GaugeFunc {
	mustCheck(name, kindGauge, nil)
	return register(r, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: r.constLabels()}, fn))
}

// Histogram returns the histogram name with explicit buckets (nil is refused: Prometheus's
// default buckets are in seconds, Q-IM latencies are recorded in µs; see LatencyBucketsMicros).
func (r *Registry) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	mustCheck(name, kindHistogram, nil)
	mustBuckets(name, buckets)
	return register(r, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: r.constLabels()}))
}

// HistogramVec returns the histogram family name with explicit buckets and the given labels.
func (r *Registry) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	mustCheck(name, kindHistogram, labels)
	mustBuckets(name, buckets)
	return register(r, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: r.constLabels()}, labels))
}

// LatencyBucketsMicros are latency buckets in microseconds from 50 µs to ~105 s (doubling),
// covering a Redis call and a stalled broker alike.
var LatencyBucketsMicros = prometheus.ExponentialBuckets(50, 2, 22)

func mustCheck(name string, kind metricKind, labels []string) {
	if err := checkMetric(name, kind, labels); err != nil {
		panic(err)
	}
}

func mustBuckets(name string, buckets []float64) {
	if len(buckets) == 0 {
		panic(&MetricError{Name: name, Reason: "a histogram needs explicit buckets"})
	}
}

// register adds c, or returns the collector already registered under the same descriptor.
func register[T prometheus.Collector](r *Registry, c T) T {
	err := r.reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing
		}
	}
	panic(fmt.Errorf("obs: register metric: %w", err))
}

// invariantHelp starts the HELP of every invariant counter, so a scrape tells them apart.
const invariantHelp = "Invariant (always zero): "

// Invariant registers an always-zero counter: it counts events the contract says never happen
// (a dropped queue item, a watermark gap, a conflicting dispatch). Any non-zero value makes
// Healthy false and /healthz 503, so the invariant gate and operators see it without a
// dashboard. name must be a row of contract.InvariantCounters() for this registry's service, and
// the row's meaning becomes the HELP: a counter the table does not list panics with a
// *MetricError, because gate 8 expects exactly the table and would never look for it.
func (r *Registry) Invariant(name string) prometheus.Counter {
	row, ok := contract.LookupInvariantCounter(name)
	if !ok || row.Service != r.service {
		panic(&MetricError{Name: name, Reason: "not an invariant counter of service " + r.service +
			" in contract.InvariantCounters()"})
	}
	c := r.Counter(name, invariantHelp+row.Meaning)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.invariants[name]; !ok {
		r.invariants[name] = c
	}
	return r.invariants[name]
}

// InvariantNames returns the names of the invariant counters registered so far, sorted.
func (r *Registry) InvariantNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.invariants))
	for name := range r.invariants {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// InvariantValue is one invariant counter and its current value.
type InvariantValue struct {
	Name  string
	Value float64
}

// Violations returns the invariant counters that are not zero, sorted by name.
func (r *Registry) Violations() []InvariantValue {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []InvariantValue
	for name, c := range r.invariants {
		var m dto.Metric
		if err := c.Write(&m); err != nil || m.GetCounter().GetValue() != 0 {
			out = append(out, InvariantValue{Name: name, Value: m.GetCounter().GetValue()})
		}
	}
	slices.SortFunc(out, func(a, b InvariantValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Healthy reports whether every invariant counter is zero, and the names of those that are not.
func (r *Registry) Healthy() (bool, []string) {
	v := r.Violations()
	names := make([]string, len(v))
	for i, x := range v {
		names[i] = x.Name
	}
	return len(v) == 0, names
}
