package cli

import "testing"

func TestParseSkips(t *testing.T) {
	got, err := parseSkips([]string{"redis-artifacts: hot history is not bounded yet"})
	if err != nil || got["redis-artifacts"] != "hot history is not bounded yet" || len(got) != 1 {
		t.Fatalf("parseSkips = %v, %v", got, err)
	}
	for _, bad := range []string{"redis-artifacts", "redis-artifacts:", "no-such-gate:because"} {
		if _, err := parseSkips([]string{bad}); err == nil {
			t.Errorf("--skip %q accepted", bad)
		}
	}
}
