package services

import (
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/admin"
	"github.com/qim-dev/qim/services/archiver"
	"github.com/qim-dev/qim/services/fanout"
	"github.com/qim-dev/qim/services/gateway"
	"github.com/qim-dev/qim/services/mailbox"
	"github.com/qim-dev/qim/services/notify"
	"github.com/qim-dev/qim/services/room"
	"github.com/qim-dev/qim/services/session"
	"github.com/qim-dev/qim/services/writer"
)

// TestInvariantCountersMatchContract: every service registers exactly the invariant counters
// contract.InvariantCounters() lists for it. A counter registered but not listed would never be
// checked by gate 8; a listed one no service registers would fail gate 8 on every run.
func TestInvariantCountersMatchContract(t *testing.T) {
	registered := map[string][]string{
		"writer":   writer.InvariantCounters(),
		"mailbox":  mailbox.InvariantCounters(),
		"fanout":   fanout.InvariantCounters(),
		"session":  session.InvariantCounters(),
		"gateway":  gateway.InvariantCounters(),
		"archiver": archiver.InvariantCounters(),
		"admin":    admin.InvariantCounters(),
		"room":     room.InvariantCounters(),
		"notify":   notify.InvariantCounters(),
	}
	var names []string
	for _, p := range programs() {
		names = append(names, p.name)
		if _, ok := registered[p.name]; !ok {
			t.Errorf("service %s is not checked here: add its InvariantCounters()", p.name)
		}
	}
	table := map[string][]string{}
	for _, c := range contract.InvariantCounters() {
		if !slices.Contains(names, c.Service) {
			t.Errorf("%s belongs to %q, which is no service", c.Name, c.Service)
		}
		table[c.Service] = append(table[c.Service], c.Name)
	}
	for svc, got := range registered {
		want := table[svc]
		slices.Sort(want)
		for _, n := range got {
			if !slices.Contains(want, n) {
				t.Errorf("%s registers %s, which contract.InvariantCounters() does not list for it", svc, n)
			}
		}
		for _, n := range want {
			if !slices.Contains(got, n) {
				t.Errorf("contract.InvariantCounters() lists %s for %s, which does not register it", n, svc)
			}
		}
	}
	if len(registered["gateway"]) == 0 || len(registered["mailbox"]) != 3 {
		t.Fatalf("scratch registries saw %v: the check would be blind", registered)
	}
}
