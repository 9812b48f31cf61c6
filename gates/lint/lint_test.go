package lint

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func runOnly(t *testing.T, root string, only ...string) Report {
	t.Helper()
	rep, err := Run(context.Background(), Options{Root: root, Only: only, NoInstall: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func checkNamed(t *testing.T, rep Report, name string) Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s", name)
	return Check{}
}

func TestRunOptions(t *testing.T) {
	root := writeTree(t, map[string]string{"a/a.go": "package a\n"})
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"unknown only", Options{Root: root, Only: []string{"gofmtt"}}, "unknown check"},
		{"unknown skip", Options{Root: root, Skip: []string{"golangci-lint"}}, "unknown check"},
		{"missing root", Options{Root: filepath.Join(root, "nope")}, "lint: root"},
		{"root is a file", Options{Root: filepath.Join(root, "go.mod")}, "not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunVerdicts(t *testing.T) {
	clean := writeTree(t, map[string]string{"a/a.go": "package a\n"})
	tests := []struct {
		name       string
		opts       Options
		wantPassed bool
		wantRan    []string
	}{
		{"all source rules pass", Options{Root: clean, Skip: []string{"gofmt", "vet", "golangci"}}, true,
			[]string{"aliases", "cql-delete", "unread-subtraction", "contract-constants", "secret-logging", "allowlist"}},
		{"skip beats only", Options{Root: clean, Only: []string{"aliases", "gofmt"}, Skip: []string{"gofmt"}}, true,
			[]string{"aliases"}},
		{"nothing ran is not a pass", Options{Root: clean, Skip: CheckNames()}, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var ran []string
			for _, c := range rep.Checks {
				if !c.Skipped {
					ran = append(ran, c.Name)
				}
				if c.Skipped && c.Passed {
					t.Fatalf("check %s is both skipped and passed", c.Name)
				}
			}
			if rep.Passed != tc.wantPassed || !reflect.DeepEqual(ran, tc.wantRan) {
				t.Fatalf("Passed=%v ran=%v, want %v %v", rep.Passed, ran, tc.wantPassed, tc.wantRan)
			}
			if len(rep.Checks) != len(CheckNames()) {
				t.Fatalf("report lists %d checks, want all %d", len(rep.Checks), len(CheckNames()))
			}
		})
	}
}

// TestReportJSON: gate 1 stores the report as JSON, so it must round-trip and keep findings an
// array (never null) for consumers.
func TestReportJSON(t *testing.T) {
	root := writeTree(t, map[string]string{"a/a.yml": "x: " + aliasNode + "\n"})
	rep := runOnly(t, root, "aliases", "cql-delete")
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rep) {
		t.Fatalf("round trip changed the report:\n%+v\n%+v", rep, back)
	}
	for _, want := range []string{`"findings":[]`, `"rule":"aliases"`, `"file":"a/a.yml"`, `"line":1`, `"passed":false`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("JSON lacks %s: %s", want, data)
		}
	}
}

// TestListFilesGit: in a git work tree the lint sees tracked and untracked files but not ignored
// ones, and not files deleted from the work tree.
func TestListFilesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := writeTree(t, map[string]string{
		".gitignore": "/bin/\n", "bin/tool.go": "package x\n", "a/a.go": "package a\n", "a/gone.go": "package a\n",
	})
	for _, args := range [][]string{{"init", "-q"}, {"add", "a/gone.go"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Remove(filepath.Join(root, "a", "gone.go")); err != nil { // tracked, deleted, unstaged
		t.Fatal(err)
	}
	got, err := listFiles(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".gitignore", "a/a.go", "go.mod"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listFiles = %v, want %v", got, want)
	}
}

func TestWriteText(t *testing.T) {
	rep := Report{Passed: false, Checks: []Check{
		{Name: "aliases", Findings: []Finding{{File: "a.go", Line: 3, Rule: "aliases", Text: "bad"}}},
		{Name: "golangci", Findings: []Finding{{Rule: "golangci", Text: "missing"}}},
		{Name: "vet", Skipped: true, Findings: []Finding{}},
	}}
	var b strings.Builder
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a.go:3: [aliases] bad", "[golangci] missing", "SKIP", "FAIL (2 findings in 2 of 2 checks, 1 skipped)"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, b.String())
		}
	}
}
