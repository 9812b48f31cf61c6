package lint

import (
	"strings"
	"testing"
)

func TestAllowlist(t *testing.T) {
	violation := map[string]string{"services/a/a.go": "package a\n\nconst q = \"DELETE FROM t\"\n"}
	tests := []struct {
		name       string
		allow      string
		only       []string
		wantRule   int      // findings left on cql-delete
		wantAllow  []string // substrings of allowlist findings, in order
		wantPassed bool
	}{
		{name: "file entry suppresses", allow: "services/a/a.go:cql-delete  # migration fixture, see ADR-7\n",
			wantPassed: true},
		{name: "directory entry suppresses", allow: "services/:cql-delete # legacy import, gone in v2\n",
			wantPassed: true},
		{name: "other rule does not suppress", allow: "services/a/a.go:aliases # x\n",
			wantRule: 1, wantAllow: []string{"suppresses nothing"}},
		{name: "missing reason", allow: "services/a/a.go:cql-delete\n",
			wantRule: 1, wantAllow: []string{"has no `# reason`"}},
		{name: "malformed line", allow: "services/a/a.go # why\n",
			wantRule: 1, wantAllow: []string{"want `path:rule  # reason`"}},
		{name: "tool checks are not allowlistable", allow: "services/a/a.go:vet # why\n",
			wantRule: 1, wantAllow: []string{"cannot be allowlisted"}},
		{name: "path not in tree", allow: "services/gone.go:cql-delete # why\n",
			wantRule: 1, wantAllow: []string{"not in the tree"}},
		{name: "entries of rules that did not run are not stale", allow: "services/a/a.go:aliases # x\n",
			only: []string{"cql-delete", "allowlist"}, wantRule: 1},
		{name: "comments and blank lines", allow: "# header\n\n   # indented\n", wantRule: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{AllowFile: tc.allow}
			for p, c := range violation {
				files[p] = c
			}
			only := tc.only
			if only == nil {
				only = []string{"aliases", "cql-delete", "allowlist"}
			}
			rep := runOnly(t, writeTree(t, files), only...)
			rule, allow := checkNamed(t, rep, "cql-delete"), checkNamed(t, rep, "allowlist")
			if len(rule.Findings) != tc.wantRule {
				t.Fatalf("cql-delete findings %+v, want %d", rule.Findings, tc.wantRule)
			}
			if len(allow.Findings) != len(tc.wantAllow) {
				t.Fatalf("allowlist findings %+v, want %q", allow.Findings, tc.wantAllow)
			}
			for i, want := range tc.wantAllow {
				f := allow.Findings[i]
				if f.File != AllowFile || f.Line != 1 || !strings.Contains(f.Text, want) {
					t.Fatalf("allowlist finding %+v, want %s:1 containing %q", f, AllowFile, want)
				}
			}
			if rep.Passed != tc.wantPassed {
				t.Fatalf("report Passed = %v, want %v", rep.Passed, tc.wantPassed)
			}
		})
	}
}

// TestRepoAllowFileParses keeps the checked-in allow.txt well-formed.
func TestRepoAllowFileParses(t *testing.T) {
	al := loadAllowlist("../..")
	if len(al.problems) != 0 {
		t.Fatalf("%s: %+v", AllowFile, al.problems)
	}
}
