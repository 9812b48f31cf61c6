package gateway

import (
	"testing"
	"time"
)

// An address is refused after its burst of failures and no sooner; other addresses are not.
func TestAuthLimiterPerAddress(t *testing.T) {
	l := newAuthLimiter(3, time.Hour) // nothing is forgiven during the test
	for i := range 3 {
		if l.blocked("10.0.0.1") {
			t.Fatalf("blocked after %d failures, burst 3", i)
		}
		l.failed("10.0.0.1")
	}
	if !l.blocked("10.0.0.1") {
		t.Fatal("not blocked after 3 failures, burst 3")
	}
	if l.blocked("10.0.0.2") {
		t.Fatal("another address is blocked")
	}
}

// A failure is forgiven after one refill interval.
func TestAuthLimiterRefills(t *testing.T) {
	l := newAuthLimiter(1, time.Millisecond)
	l.failed("10.0.0.1")
	deadline := time.Now().Add(10 * time.Second) // a hang guard, not a timing assertion
	for l.blocked("10.0.0.1") {
		if time.Now().After(deadline) {
			t.Fatal("a failure was never forgiven")
		}
		time.Sleep(time.Millisecond)
	}
}
