package main

import (
	"strings"
	"testing"
	"time"
)

// The amendment commands name a stored message by its #seq; without one they explain
// themselves and queue nothing.
func TestAmendCommandsOffline(t *testing.T) {
	cmd, stdin, out := startDesktop(t, "127.0.0.1:1")
	if _, err := stdin.WriteString("/help\n/recall 8\n/edit 8 3\n/delete 8 x\n/recall 8 3\n/pending\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 5*time.Second, out)
	for _, want := range []string{"/recall USER SEQ", "usage: /recall USER SEQ (missing arguments)",
		"usage: /edit USER SEQ TEXT (missing arguments)", `usage: /delete USER SEQ (SEQ must be a message's #number, got "x")`,
		"usage: /recall USER SEQ (no message #3 with 8 on this device (/history 8))"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "[queued]") {
		t.Errorf("a refused amendment was queued:\n%s", out.String())
	}
}
