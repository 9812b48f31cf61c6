package lint

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// marker ends a fixture line that must produce one finding of the rule under test per occurrence.
// It sits in a comment in every language the fixtures use (//, --, #).
const marker = "WANT"

// testGoMod makes each fixture tree a module, so the tool checks can run on it.
const testGoMod = "module example.com/fixture\n\ngo 1.26\n"

// writeTree writes files (slash path → content) and a go.mod into a fresh temp dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{"go.mod": testGoMod}
	for p, c := range files {
		all[p] = c
	}
	for p, c := range all {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runCheck runs one check over root and returns it, failing the test if Run itself fails.
func runCheck(t *testing.T, root, name string, mod ...func(*Options)) Check {
	t.Helper()
	opts := Options{Root: root, Only: []string{name}, NoInstall: true}
	for _, m := range mod {
		m(&opts)
	}
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("check %s missing from report", name)
	return Check{}
}

// wantLines returns "path:line" once per marker on each fixture line.
func wantLines(files map[string]string) []string {
	var want []string
	for p, c := range files {
		for i, l := range strings.Split(c, "\n") {
			for range strings.Count(l, marker) {
				want = append(want, p+":"+strconv.Itoa(i+1))
			}
		}
	}
	sort.Strings(want)
	return want
}

func gotLines(c Check) []string {
	var got []string
	for _, f := range c.Findings {
		got = append(got, f.File+":"+strconv.Itoa(f.Line))
	}
	sort.Strings(got)
	return got
}

// ruleCase is one fixture tree for a source rule; marked lines are the expected findings.
type ruleCase struct {
	name  string
	files map[string]string
}

// runRuleCases checks that rule reports exactly the marked lines of each case, and that the
// check passes exactly when nothing is marked.
func runRuleCases(t *testing.T, rule string, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := runCheck(t, writeTree(t, tc.files), rule)
			want, got := wantLines(tc.files), gotLines(c)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("findings at %v, want %v\nfindings: %+v", got, want, c.Findings)
			}
			if c.Passed != (len(want) == 0) {
				t.Fatalf("Passed = %v with %d findings", c.Passed, len(c.Findings))
			}
			for _, f := range c.Findings {
				if f.Rule != rule || f.Text == "" {
					t.Fatalf("finding has rule %q text %q, want rule %q and a text", f.Rule, f.Text, rule)
				}
			}
		})
	}
}

// goSrc builds a Go file in package p with the given imports and function body lines, so the
// line of each statement is easy to mark.
func goSrc(imports []string, body ...string) string {
	var b strings.Builder
	b.WriteString("package p\n\n")
	for _, imp := range imports {
		b.WriteString("import " + imp + "\n")
	}
	b.WriteString("\nfunc f() {\n")
	for _, l := range body {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}
