package webit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the SDK's generated contract.ts and vectors.json")

// webDir is the TS SDK, relative to this package.
const webDir = "../../clients/web"

// TestGeneratedFilesAreCurrent: the SDK's contract constants and test vectors are what the Go
// contract and encoders produce now (-update rewrites them).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	vec, err := buildVectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{
		{filepath.Join(webDir, "src", "gen", "contract.ts"), []byte(contractTS())},
		{filepath.Join(webDir, "test", "vectors.json"), vec},
	} {
		if *update {
			if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		have, err := os.ReadFile(f.path)
		if err != nil || string(have) != string(f.want) {
			t.Errorf("%s is stale (%v): go test ./gates/webit -run TestGeneratedFilesAreCurrent -update", f.path, err)
		}
	}
}
