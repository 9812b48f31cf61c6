package svc

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated block of compose.integration.yml from ComposeServices")

// TestComposeIsGenerated: the Q-IM services of compose.integration.yml are exactly
// ComposeServices(2, 64, cql) between the markers; a stale file fails (run with -update).
func TestComposeIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", "compose.integration.yml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := string(raw)
	begin := strings.Index(file, ComposeBegin+"\n")
	end := strings.Index(file, ComposeEnd+"\n")
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the generated block's markers %q … %q", path, ComposeBegin, ComposeEnd)
	}
	got := file[begin : end+len(ComposeEnd)+1]
	want := ComposeServices(composeInstances, 64, true)
	if got == want {
		return
	}
	if !*update {
		t.Fatalf("the generated services of %s are stale: run go test ./gates/svc -run TestComposeIsGenerated -update\n got:\n%s\nwant:\n%s", path, got, want)
	}
	if err := os.WriteFile(path, []byte(file[:begin]+want+file[end+len(ComposeEnd)+1:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
