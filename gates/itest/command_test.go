package itest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// fatalTB records Fatalf instead of stopping the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper()                        {}
func (f *fatalTB) Fatalf(format string, a ...any) { f.fatal = fmt.Sprintf(format, a...) }

// TestCommandEndsWithItsContext: a command whose child outlives it, holding its output, still
// ends when ctx does and is reported failed. Before the process group was killed, Command
// blocked here until the grandchild's hour of sleep was over.
func TestCommandEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Command(ctx, tb, t.TempDir(), nil, "sh", "-c", "sleep 3600 & wait")
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // not a timing judgement: the bug blocks for an hour
		t.Fatal("Command still running a minute after its context ended")
	}
	if tb.fatal == "" {
		t.Fatal("Command did not report the killed command as failed")
	}
}
