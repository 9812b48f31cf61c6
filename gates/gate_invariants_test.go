package gates

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// fakeService serves crafted /metrics and /healthz for one service name.
type fakeService struct {
	metrics string
	health  int
}

// exposition writes what obs would export for service: every table counter of the service at
// value, plus one ordinary counter, in the Prometheus text format.
func exposition(service string, value float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP qim_%s_things_total Ordinary.\n# TYPE qim_%[1]s_things_total counter\nqim_%[1]s_things_total{service=%[1]q} 12\n", service)
	for _, c := range contract.InvariantCounters() {
		if c.Service == service {
			fmt.Fprintf(&b, "# HELP %s %s%s\n# TYPE %[1]s counter\n%[1]s{service=%[4]q} %[5]g\n", c.Name, invariantHelp, c.Meaning, service, value)
		}
	}
	return b.String()
}

// runInvariants runs gate 8 against fake services; edit changes the healthy defaults.
// With cql the stack has a CQL node, so the deployment runs the HistoryArchiver too.
func runInvariants(t *testing.T, cql bool, edit func(map[string]*fakeService)) *Result {
	t.Helper()
	ep := stack.Endpoints{Dir: t.TempDir(), DispatchShards: 64}
	names := svc.Order
	if cql {
		ep.CQL, names = "127.0.0.1:1", append(slices.Clone(svc.Order), svc.Archiver)
	}
	fakes := map[string]*fakeService{}
	for _, name := range names {
		fakes[name] = &fakeService{metrics: exposition(name, 0), health: http.StatusOK}
	}
	edit(fakes)
	set, err := svc.New("/nonexistent/qim", ep)
	if err != nil {
		t.Fatal(err)
	}
	set.Addrs.Metrics = map[string]string{}
	for name, f := range fakes {
		if f == nil {
			continue
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/metrics":
				_, _ = w.Write([]byte(f.metrics))
			case "/healthz":
				w.WriteHeader(f.health)
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(srv.Close)
		set.Addrs.Metrics[name] = strings.TrimPrefix(srv.URL, "http://")
	}
	env := &Env{Progress: &bytes.Buffer{}, Deployment: func(context.Context) (*svc.Set, error) { return set, nil }}
	return RunOne(context.Background(), invariantsGate{}, env, time.Hour)
}

func TestInvariantsGate(t *testing.T) {
	fenced := contract.InvariantMailboxWatermarkFenced
	tests := []struct {
		name string
		edit func(map[string]*fakeService)
		fail []string // substrings, one per failed check, in order; none = the gate passes
	}{
		{"all zero and healthy", func(map[string]*fakeService) {}, nil},
		{"counter missing", func(f map[string]*fakeService) {
			var keep []string
			for _, l := range strings.Split(f["mailbox"].metrics, "\n") {
				if !strings.Contains(l, fenced) {
					keep = append(keep, l)
				}
			}
			f["mailbox"].metrics = strings.Join(keep, "\n")
		}, []string{"mailbox " + fenced + ": missing from /metrics"}},
		{"counter renamed", func(f map[string]*fakeService) {
			f["mailbox"].metrics = strings.ReplaceAll(f["mailbox"].metrics, fenced, "qim_mailbox_fenced_total")
		}, []string{"mailbox " + fenced + ": missing from /metrics", "): qim_mailbox_fenced_total"}},
		{"counter non-zero", func(f map[string]*fakeService) {
			f["mailbox"].metrics = strings.Replace(f["mailbox"].metrics, fenced+`{service="mailbox"} 0`, fenced+`{service="mailbox"} 2`, 1)
		}, []string{"mailbox " + fenced + ": 2 — shard epoch"}},
		{"healthz 503", func(f map[string]*fakeService) { f["writer"].health = http.StatusServiceUnavailable },
			[]string{"writer /healthz: /healthz 503"}},
		{"undeclared invariant", func(f map[string]*fakeService) {
			f["writer"].metrics += "# HELP qim_writer_lost_total " + invariantHelp + "x\n# TYPE qim_writer_lost_total counter\nqim_writer_lost_total{service=\"writer\"} 0\n"
		}, []string{"writer undeclared invariants: invariant counters exported but not in contract.InvariantCounters(): qim_writer_lost_total"}},
		{"another meaning", func(f map[string]*fakeService) {
			f["fanout"].metrics = strings.Replace(f["fanout"].metrics, "could not be decoded", "were odd", 1)
		}, []string{"fanout " + contract.InvariantFanoutUnplannableRecords + ": HELP"}},
		{"another service's port", func(f map[string]*fakeService) {
			f["session"].metrics = strings.ReplaceAll(f["session"].metrics, `"session"`, `"gateway"`)
		},
			// one finding per session invariant counter
			slices.Repeat([]string{`series labelled service="gateway"`}, countFor("session"))},
		{"gauge", func(f map[string]*fakeService) {
			f["gateway"].metrics = strings.Replace(f["gateway"].metrics, "counter\nqim_gateway_send", "gauge\nqim_gateway_send", 1)
		}, []string{"exported as a GAUGE"}},
		{"not scraped", func(f map[string]*fakeService) { f["fanout"].metrics = "not { prometheus" },
			[]string{"fanout /metrics: scraped 0 metric families (parse /metrics", "fanout " + contract.InvariantFanoutUnplannableRecords + ": not scraped"}},
		{"no address", func(f map[string]*fakeService) { f["gateway"] = nil }, []string{"gateway /metrics: the deployment has no metrics address"}},
		{"archiver counter non-zero", func(f map[string]*fakeService) {
			f["archiver"].metrics = strings.Replace(f["archiver"].metrics, `"archiver"} 0`, `"archiver"} 1`, 1)
		}, []string{"archiver " + contract.InvariantArchiverUnarchivableRecords + ": 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runInvariants(t, true, tc.edit)
			failed := FailedChecks(r)
			if r.Passed != (len(tc.fail) == 0) || len(failed) != len(tc.fail) {
				t.Fatalf("passed=%v error=%q failed=%q, want %d failures", r.Passed, r.Error, failed, len(tc.fail))
			}
			for i, want := range tc.fail {
				if !strings.Contains(failed[i], want) {
					t.Errorf("failure %d = %q, want it to contain %q", i, failed[i], want)
				}
			}
			if len(tc.fail) == 0 {
				if n := len(r.Metrics); n != len(contract.InvariantCounters()) {
					t.Errorf("%d counter values recorded, want %d: %v", n, len(contract.InvariantCounters()), r.Metrics)
				}
			}
		})
	}
}

// Without a CQL node the HistoryArchiver is not deployed: its counter is reported skipped, never
// passed, and the other services are judged as before.
func TestInvariantsGateWithoutCQL(t *testing.T) {
	r := runInvariants(t, false, func(map[string]*fakeService) {})
	if !r.Passed || len(FailedChecks(r)) != 0 {
		t.Fatalf("passed=%v failed=%q", r.Passed, FailedChecks(r))
	}
	var skipped []string
	for _, c := range r.Checks {
		if c.Skipped {
			skipped = append(skipped, c.Name)
		}
	}
	if !slices.Equal(skipped, []string{"archiver deployed"}) {
		t.Fatalf("skipped %q, want only the archiver", skipped)
	}
	if n := len(r.Metrics); n != len(contract.InvariantCounters())-countFor("archiver") {
		t.Errorf("%d counter values recorded: %v", n, r.Metrics)
	}
	broken := runInvariants(t, false, func(f map[string]*fakeService) { f["gateway"].health = http.StatusServiceUnavailable })
	if broken.Passed {
		t.Fatal("a 503 passed on a stack without CQL")
	}
}

// Without a deployment the gate fails: no evidence is never a pass.
func TestInvariantsGateWithoutDeployment(t *testing.T) {
	env := &Env{Progress: &bytes.Buffer{}, Deployment: func(context.Context) (*svc.Set, error) {
		return nil, fmt.Errorf("svc: build qim: no go")
	}}
	if r := RunOne(context.Background(), invariantsGate{}, env, time.Hour); r.Passed || !strings.Contains(r.Error, "no go") {
		t.Fatalf("passed=%v error=%q", r.Passed, r.Error)
	}
}

// countFor is how many invariant counters the contract gives service.
func countFor(service string) int {
	n := 0
	for _, c := range contract.InvariantCounters() {
		if c.Service == service {
			n++
		}
	}
	return n
}
