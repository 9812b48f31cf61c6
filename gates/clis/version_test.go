package clis

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// binaries are the programs under cmd/, each a user-facing binary.
var binaries = []string{"qim", "qimctl", "qim-gate", "qim-loadgen", "qim-lint", "qim-desktop"}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// built builds every binary once per test process, stamping a known revision the way the
// Makefile does, and returns the directory holding them.
func built(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "qim-clis-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-ldflags", "-X github.com/qim-dev/qim/services/buildinfo.revision="+stampedRevision,
			"-o", buildDir+string(filepath.Separator), "./cmd/...")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

const stampedRevision = "0123456789abcdef0123456789abcdef01234567"

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build ./cmd/...: " + e.err.Error() + "\n" + e.out }

// Every binary answers --version with its name, contract.ProductVersion and the revision it was
// built from, and exits 0.
func TestEveryBinaryReportsItsVersion(t *testing.T) {
	dir := built(t)
	for _, b := range binaries {
		out, err := exec.Command(filepath.Join(dir, b), "--version").CombinedOutput()
		want := b + " " + contract.ProductVersion + " (revision " + stampedRevision[:12]
		if err != nil || !strings.HasPrefix(string(out), want) || strings.Count(string(out), "\n") != 1 {
			t.Errorf("%s --version = %q, %v; want one line starting %q", b, out, err, want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
