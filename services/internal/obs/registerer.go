package obs

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Registry implements prometheus.Registerer so components that build their own collectors (a
// metrics struct, a library's collector) still go through the naming contract.
var _ prometheus.Registerer = (*Registry)(nil)

// descPattern reads the name and label names out of prometheus.Desc.String(), the only place a
// descriptor exposes them. An unreadable descriptor is refused, never waved through.
var (
	descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: "(?:[^"\\]|\\.)*", ` +
		`(?:unit: "(?:[^"\\]|\\.)*", )?constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
	constLabelName = regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)
)

// Register checks every descriptor of c (qim_ prefix, lower snake case, label names; the
// _total rule needs the metric type, which a descriptor does not carry, so it is enforced only by
// the typed helpers) and registers c with the service label added.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := checkCollector(c); err != nil {
		return err
	}
	return prometheus.WrapRegistererWith(r.constLabels(), r.reg).Register(c)
}

// MustRegister registers each collector and panics on the first refusal or conflict.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister removes a collector registered through Register.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	return prometheus.WrapRegistererWith(r.constLabels(), r.reg).Unregister(c)
}

func checkCollector(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 8)
	go func() { c.Describe(ch); close(ch) }()
	var descs []*prometheus.Desc
	for d := range ch {
		descs = append(descs, d)
	}
	for _, d := range descs {
		if err := checkDesc(d); err != nil {
			return err
		}
	}
	return nil
}

func checkDesc(d *prometheus.Desc) error {
	s := d.String()
	m := descPattern.FindStringSubmatch(s)
	if m == nil {
		return &MetricError{Name: s, Reason: "unreadable metric descriptor"}
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		return &MetricError{Name: m[1], Reason: "unreadable metric name"}
	}
	var labels []string
	for _, cl := range constLabelName.FindAllStringSubmatch(m[2], -1) {
		labels = append(labels, cl[1])
	}
	if m[3] != "" {
		for _, vl := range strings.Split(m[3], ",") {
			labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(vl, "c("), ")"))
		}
	}
	kind := kindGauge // neutral: no suffix rule
	if strings.HasSuffix(name, "_total") {
		kind = kindCounter
	}
	return checkMetric(name, kind, labels)
}
