package contract

import (
	"strings"
	"testing"
)

// The invariant table is well formed: unique names, each named after its service (so a scrape
// can be read without the table), a counter name, and a meaning to print in gate 8's report.
func TestInvariantCounterTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range InvariantCounters() {
		switch {
		case seen[c.Name]:
			t.Errorf("%s listed twice", c.Name)
		case !strings.HasPrefix(c.Name, "qim_"+c.Service+"_") || !strings.HasSuffix(c.Name, "_total"):
			t.Errorf("%s: want qim_%s_<what>_total", c.Name, c.Service)
		case strings.TrimSpace(c.Meaning) == "":
			t.Errorf("%s has no meaning", c.Name)
		}
		seen[c.Name] = true
		if got, ok := LookupInvariantCounter(c.Name); !ok || got != c {
			t.Errorf("LookupInvariantCounter(%s) = %+v, %v", c.Name, got, ok)
		}
	}
	if _, ok := LookupInvariantCounter("qim_writer_ack_without_commit_total"); ok {
		t.Error("lookup found a name the table does not list")
	}
}
