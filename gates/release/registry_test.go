package release

import (
	"strings"
	"testing"
)

// TestRegistryIsTheTenGatesInReleaseOrder: --full runs exactly the ten gates, in release order
// (chaos last: after perf, on a stack of its own).
func TestRegistryIsTheTenGatesInReleaseOrder(t *testing.T) {
	var names []string
	for _, g := range Registry() {
		names = append(names, g.Name())
	}
	want := "lint tests services e2e perf theavy redis-artifacts invariants orphan-audit chaos"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("registry %q, want %q", got, want)
	}
}

// TestSoakRunsByNameOnly: the soak is found by name but is not a release gate, so --full (and
// make test) never runs an hour of load.
func TestSoakRunsByNameOnly(t *testing.T) {
	if _, ok := Lookup("soak"); !ok {
		t.Fatal("Lookup(soak) found nothing: `qim-gate run soak` would be refused")
	}
	for _, g := range Registry() {
		if g.Name() == "soak" {
			t.Fatal("soak is in the release registry: --full would run it")
		}
	}
}
