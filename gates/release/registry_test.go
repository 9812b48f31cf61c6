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
