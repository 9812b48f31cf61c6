package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetrierCountsConsecutiveFailuresUntilASuccess(t *testing.T) {
	r := NewRetrier(time.Microsecond, time.Microsecond)
	calls, logged := 0, 0
	ok := r.Do(context.Background(), func() error {
		calls++
		if n, _ := r.Failing(); n != int64(calls-1) {
			t.Fatalf("attempt %d sees %d failures", calls, n)
		}
		if calls < 4 {
			return errors.New("broker down")
		}
		return nil
	}, func(int, error) { logged++ })
	if n, last := r.Failing(); !ok || calls != 4 || logged != 3 || n != 0 || last != "broker down" {
		t.Fatalf("Do = %v after %d calls (%d logged); Failing = %d, %q", ok, calls, logged, n, last)
	}
	r.Failed(errors.New("commit failed"))
	if n, last := r.Failing(); n != 1 || last != "commit failed" {
		t.Fatalf("Failing after Failed = %d, %q", n, last)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r.Do(ctx, func() error { return errors.New("x") }, func(int, error) {}) {
		t.Fatal("Do succeeded after its context ended")
	}
}
