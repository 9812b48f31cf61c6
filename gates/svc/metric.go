package svc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ErrNoMetric is wrapped when a scrape does not hold the metric asked for: a renamed metric must
// fail the judgement that reads it, never read as zero.
var ErrNoMetric = errors.New("svc: metric not in the scrape")

// ScrapeTimeout bounds one /metrics request.
const ScrapeTimeout = 10 * time.Second

// ScrapeMetrics fetches and parses the /metrics of the service listening on addr, in the
// Prometheus text format.
func ScrapeMetrics(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, ScrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return fams, nil
}

// FamilySum is the sum of every series of the family name in fams (a counter, a gauge or an
// untyped value; a labelled family is summed over its labels). A missing or empty family wraps
// ErrNoMetric.
func FamilySum(fams map[string]*dto.MetricFamily, name string) (float64, error) {
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("%w: %s", ErrNoMetric, name)
	}
	var sum float64
	for _, m := range f.GetMetric() {
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		default:
			return 0, fmt.Errorf("svc: %s is neither a counter nor a gauge", name)
		}
	}
	return sum, nil
}

// Metric scrapes a service's /metrics and returns FamilySum of the family name.
func (s *Set) Metric(ctx context.Context, service, name string) (float64, error) {
	addr, ok := s.Addrs.Metrics[service]
	if !ok {
		return 0, fmt.Errorf("svc: %s has no metrics address", service)
	}
	fams, err := ScrapeMetrics(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("svc: scrape %s: %w", service, err)
	}
	v, err := FamilySum(fams, name)
	if err != nil {
		return 0, fmt.Errorf("%w (of %s)", err, service)
	}
	return v, nil
}
