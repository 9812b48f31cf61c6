package svc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ErrNoMetric is wrapped when a scrape does not hold the metric asked for: a renamed metric must
// fail the judgement that reads it, never read as zero.
var ErrNoMetric = errors.New("svc: metric not in the scrape")

// metricTimeout bounds one /metrics request.
const metricTimeout = 5 * time.Second

// Metric scrapes a service's /metrics and returns the sum of every series of the family name
// (a counter, a gauge or an untyped value; a labelled family is summed over its labels).
func (s *Set) Metric(ctx context.Context, service, name string) (float64, error) {
	addr, ok := s.Addrs.Metrics[service]
	if !ok {
		return 0, fmt.Errorf("svc: %s has no metrics address", service)
	}
	ctx, cancel := context.WithTimeout(ctx, metricTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("svc: scrape %s: %w", service, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("svc: scrape %s: %s", service, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("svc: parse %s /metrics: %w", service, err)
	}
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("%w: %s of %s", ErrNoMetric, name, service)
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
			return 0, fmt.Errorf("svc: %s of %s is neither a counter nor a gauge", name, service)
		}
	}
	return sum, nil
}
