package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qim-dev/qim/gates/lint"
)

func TestExecute(t *testing.T) {
	clean := t.TempDir()
	writeFile(t, clean, "a/a.go", "package a\n")
	dirty := t.TempDir()
	writeFile(t, dirty, "a/a.yml", "role: "+"Message"+"Node\n") // assembled: this file is linted too

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"clean tree", []string{"--root", clean, "--only", "aliases"}, 0, "lint: PASS"},
		{"finding exits 1", []string{"--root", dirty, "--only", "aliases,cql-delete"}, 1, "a/a.yml:1: [aliases]"},
		{"unknown check exits 2", []string{"--root", clean, "--skip", "nope"}, 2, ""},
		{"bad flag exits 2", []string{"--bogus"}, 2, ""},
		{"positional args rejected", []string{"extra"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantOut) {
				t.Fatalf("stdout lacks %q:\n%s", tc.wantOut, stdout.String())
			}
			if tc.wantCode == 2 && !strings.Contains(stderr.String(), "qim-lint:") {
				t.Fatalf("stderr lacks the error: %s", stderr.String())
			}
		})
	}
}

func TestExecuteJSON(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a/a.go", "package a\n")
	var stdout, stderr bytes.Buffer
	if code := execute(context.Background(), []string{"--root", root, "--json", "--only", "aliases"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep lint.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout.String())
	}
	if !rep.Passed || len(rep.Checks) != len(lint.CheckNames()) {
		t.Fatalf("report = %+v", rep)
	}
}

func writeFile(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
