package lint

import (
	"strings"
	"testing"
)

func TestCQLDelete(t *testing.T) {
	runRuleCases(t, "cql-delete", []ruleCase{
		{"string literal in store code", map[string]string{
			"services/store/purge.go": goSrc(nil,
				`q := "DELETE FROM messages WHERE id = ?" // WANT`,
				`_ = q`),
		}},
		{"constant concatenation", map[string]string{
			"services/store/cat.go": goSrc(nil, `_ = "DELETE " + "FROM t" // WANT`),
		}},
		{"literal part of a dynamic concatenation", map[string]string{
			"services/store/dyn.go": goSrc(nil, `table := "t"`, `_ = "DELETE FROM " + table // WANT`),
		}},
		{"cql and lua scripts, comment lines skipped", map[string]string{
			"services/store/schema.cql": "-- DELETE FROM is forbidden here\nDELETE FROM t WHERE k = 1; -- WANT\n",
			"services/store/trim.lua":   "-- never DELETE FROM\nlocal q = 'delete from t' -- WANT\n",
		}},
		{"tests and code outside services are not store code", map[string]string{
			"services/store/purge_test.go": goSrc(nil, `_ = "DELETE FROM t"`),
			"tools/reset/reset.go":         goSrc(nil, `_ = "DELETE FROM t"`),
			"scripts/reset.cql":            "DELETE FROM t;\n",
		}},
		{"TTL writes and prose are clean", map[string]string{
			"services/store/ok.go": goSrc(nil,
				`_ = "INSERT INTO t (k) VALUES (?) USING TTL 604800"`,
				`_ = "rows deleted from view are hidden"`,
				`_ = "UPDATE t SET erased = true WHERE k = ?"`),
		}},
	})
}

// TestCQLDeleteFindingLines covers what markers cannot: a statement inside a multi-line raw
// literal is reported on its own line, and a file that does not parse is a finding, not a pass.
func TestCQLDeleteFindingLines(t *testing.T) {
	tests := []struct {
		name, src string
		wantLine  int
		wantText  string
	}{
		{"raw literal", "package store\n\nconst q = `\n\tSELECT 1;\n\tdelete\n\tfrom t`\n", 5, "CQL DELETE"},
		{"unparsable", "package store\n\nfunc {\n", 0, "cannot parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := runCheck(t, writeTree(t, map[string]string{"services/store/q.go": tc.src}), "cql-delete")
			if len(c.Findings) != 1 || c.Passed {
				t.Fatalf("want one finding, got %+v", c.Findings)
			}
			f := c.Findings[0]
			if f.File != "services/store/q.go" || f.Line != tc.wantLine || !strings.Contains(f.Text, tc.wantText) {
				t.Fatalf("finding %+v, want line %d containing %q", f, tc.wantLine, tc.wantText)
			}
		})
	}
}
