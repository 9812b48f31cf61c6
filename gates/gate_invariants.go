package gates

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
)

// invariantHelp starts the HELP of every always-zero counter (services/internal/obs, which
// gates cannot import, writes it; the gate reads it to find counters the table does not list).
const invariantHelp = "Invariant (always zero): "

// invariantsGate is gate 8: after the load gates ran on the run's deployment (e2e, perf, theavy
// come earlier in the release order), every always-zero counter of contract.InvariantCounters()
// must be exported by its service and be zero, and every service's /healthz must answer 200
// (docs/architecture.md, invariant 15).
//
// Invariants: the expected set is the contract table, never what a service happens to report, so
// a counter missing from a scrape (a stale binary, a renamed counter, a registry not served)
// fails; a counter a service exports as an invariant that the table does not list fails too; the
// value comes from the Prometheus text exposition parsed by expfmt, and must be the one series
// labelled with the scraped service's name, so a scrape of the wrong port cannot pass.
//
// Rejected: trusting /healthz alone. It is 503 while a registered invariant is non-zero, but it is
// silent about a counter that was never registered, which is the pass-by-omission this gate stops.
type invariantsGate struct{}

func (invariantsGate) Name() string  { return "invariants" }
func (invariantsGate) Title() string { return "always-zero counters and /healthz evidence" }

func (invariantsGate) Run(ctx context.Context, env *Env, r *Result) {
	set, err := env.Deployment(ctx)
	if err != nil {
		r.Fail(err)
		return
	}
	judgeDeployment(ctx, r, set, env)
}

// judgeDeployment records gate 8's checks for one deployment (env may be nil: no progress).
func judgeDeployment(ctx context.Context, r *Result, set *svc.Set, env *Env) {
	want := map[string][]contract.InvariantCounter{}
	for _, c := range contract.InvariantCounters() {
		want[c.Service] = append(want[c.Service], c)
	}
	deployed := set.Services()
	for service := range want {
		switch {
		case slices.Contains(deployed, service):
		case service == svc.Archiver:
			// The HistoryArchiver runs only beside a CQL node; without one it has nothing to judge.
			r.Skip(service+" deployed", "no CQL node on this stack, so no HistoryArchiver (run with --with-cql)")
		default:
			r.Check(service+" deployed", false, "contract.InvariantCounters() lists %s, which the deployment does not run", service)
		}
	}
	for _, service := range deployed {
		addr, ok := set.Addrs.Metrics[service]
		if !ok {
			r.Check(service+" /metrics", false, "the deployment has no metrics address for %s", service)
			continue
		}
		s := scrapeService(ctx, service, addr)
		base, _ := svc.ServiceOf(service) // every instance owes its service's counters
		judgeInvariants(r, s, want[base])
		if env != nil {
			env.Progressf("%s: /healthz %d, %d invariant counters expected", service, s.healthCode, len(want[service]))
		}
	}
}

// serviceScrape is what one service showed: its parsed /metrics and its /healthz answer.
type serviceScrape struct {
	service    string
	families   map[string]*dto.MetricFamily
	scrapeErr  error
	healthCode int
	healthBody string
}

func scrapeService(ctx context.Context, service, addr string) serviceScrape {
	s := serviceScrape{service: service}
	s.families, s.scrapeErr = svc.ScrapeMetrics(ctx, addr)
	s.healthCode, s.healthBody = healthz(ctx, addr)
	return s
}

// judgeInvariants records the evidence of one service: /healthz, the scrape, one check per
// expected counter (value and meaning in the detail, the value as a metric) and one for
// invariant counters the table does not list.
func judgeInvariants(r *Result, s serviceScrape, want []contract.InvariantCounter) {
	r.Check(s.service+" /healthz", s.healthCode == http.StatusOK, "/healthz %d %s", s.healthCode, s.healthBody)
	if !r.Check(s.service+" /metrics", s.scrapeErr == nil, "scraped %d metric families (%v)", len(s.families), s.scrapeErr) {
		for _, c := range want {
			r.Check(s.service+" "+c.Name, false, "not scraped — %s", c.Meaning)
		}
		return
	}
	for _, c := range want {
		v, err := invariantValue(s.families[c.Name], s.service, c)
		if err != nil {
			r.Check(s.service+" "+c.Name, false, "%v — %s", err, c.Meaning)
			continue
		}
		r.Metric(s.service+"."+c.Name, v)
		r.Check(s.service+" "+c.Name, v == 0, "%g — %s", v, c.Meaning)
	}
	var undeclared []string
	for name, mf := range s.families {
		if strings.HasPrefix(mf.GetHelp(), invariantHelp) && !slices.ContainsFunc(want, func(c contract.InvariantCounter) bool { return c.Name == name }) {
			undeclared = append(undeclared, name)
		}
	}
	slices.Sort(undeclared)
	list := "none"
	if len(undeclared) > 0 {
		list = strings.Join(undeclared, ", ")
	}
	r.Check(s.service+" undeclared invariants", len(undeclared) == 0,
		"invariant counters exported but not in contract.InvariantCounters(): %s", list)
}

// invariantValue reads an expected counter from its family: present, a counter, the table's
// meaning as HELP, exactly one series, labelled with the counter's service (every instance of a
// service labels its series alike; scraped names the process, writer-2 included).
func invariantValue(mf *dto.MetricFamily, scraped string, c contract.InvariantCounter) (float64, error) {
	switch {
	case mf == nil:
		return 0, fmt.Errorf("missing from /metrics")
	case mf.GetType() != dto.MetricType_COUNTER:
		return 0, fmt.Errorf("exported as a %s, not a counter", mf.GetType())
	case mf.GetHelp() != invariantHelp+c.Meaning:
		return 0, fmt.Errorf("HELP %q is not the table's meaning (a binary built from another contract?)", mf.GetHelp())
	case len(mf.GetMetric()) != 1:
		return 0, fmt.Errorf("%d series, want exactly 1", len(mf.GetMetric()))
	}
	m := mf.GetMetric()[0]
	if got := labelValue(m, "service"); got != c.Service {
		return 0, fmt.Errorf("series labelled service=%q, scraped from %s", got, scraped)
	}
	return m.GetCounter().GetValue(), nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
