package svc_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/qim-dev/qim/gates/svc"
)

// A OneProcess deployment is one `qim all` process behind every service name: one pid, each
// service on its own /metrics (its own registry, labelled with its own name), and a Stop of any
// name ends the process for all of them.
func TestOneProcessDeployment(t *testing.T) {
	ctx, set := deploy(t)
	if err := set.StartOneProcess(ctx); err != nil {
		t.Fatal(err)
	}
	pid := set.Pid(svc.Writer)
	for _, name := range svc.Order {
		if got := set.Pid(name); got != pid || got <= 0 {
			t.Errorf("%s runs as pid %d, the writer as %d", name, got, pid)
		}
		if got := set.Process(name); got != svc.OneProcessName {
			t.Errorf("%s's process is named %q, want %q", name, got, svc.OneProcessName)
		}
		fams, err := svc.ScrapeMetrics(ctx, set.Addrs.Metrics[name])
		if err != nil {
			t.Fatalf("%s /metrics: %v", name, err)
		}
		if got := serviceLabels(fams); len(got) != 1 || !got[name] {
			t.Errorf("%s's /metrics carries service labels %v, want only %q", name, got, name)
		}
	}
	if err := set.Stop(svc.Gateway); err != nil {
		t.Fatal(err)
	}
	for _, name := range svc.Order {
		if set.Running(name) {
			t.Errorf("%s still runs after the one process was stopped", name)
		}
	}
}

// serviceLabels are the values of the service label across every series of a scrape.
func serviceLabels(fams map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}
