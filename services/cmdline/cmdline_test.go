package cmdline

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The exit status and the one error line for each kind of outcome.
func TestExecute(t *testing.T) {
	run := func(args ...string) (int, string) {
		root := &cobra.Command{Use: "tool"}
		root.AddCommand(
			&cobra.Command{Use: "ok", RunE: func(*cobra.Command, []string) error { return nil }},
			&cobra.Command{Use: "verdict", RunE: func(*cobra.Command, []string) error {
				return Failure(errors.New("tool: 3 records missing"))
			}},
			&cobra.Command{Use: "broken", RunE: func(*cobra.Command, []string) error {
				return errors.New("dial 127.0.0.1:1: connection refused")
			}},
		)
		Setup(root)
		var stderr bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&bytes.Buffer{})
		code := Execute(context.Background(), root, &stderr)
		return code, stderr.String()
	}
	for _, tc := range []struct {
		args []string
		code int
		line string
	}{
		{[]string{"ok"}, ExitOK, ""},
		{[]string{"verdict"}, ExitFailed, "tool: 3 records missing\n"},
		{[]string{"broken"}, ExitCannot, "tool: dial 127.0.0.1:1: connection refused\n"},
		{[]string{"ok", "--no-such-flag"}, ExitCannot, "tool: usage: unknown flag: --no-such-flag (see tool ok --help)\n"},
		{[]string{"--version"}, ExitOK, ""},
	} {
		code, stderr := run(tc.args...)
		if code != tc.code || stderr != tc.line {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, stderr, tc.code, tc.line)
		}
		if strings.Contains(stderr, "Error:") || strings.Contains(stderr, "Usage:") {
			t.Errorf("%v: cobra's own error output leaked: %q", tc.args, stderr)
		}
	}
}

func TestFailureKeepsTheMessageAndBothIdentities(t *testing.T) {
	base := errors.New("findings")
	err := Failure(base)
	if err.Error() != "findings" || !errors.Is(err, ErrFailed) || !errors.Is(err, base) || Failure(nil) != nil {
		t.Fatalf("Failure(%v) = %v", base, err)
	}
}
