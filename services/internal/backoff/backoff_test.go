package backoff

import (
	"context"
	"testing"
	"time"
)

func TestSequence(t *testing.T) {
	b := New(100*time.Millisecond, time.Second)
	want := []int64{100, 200, 400, 800, 1000, 1000} // milliseconds
	for i, w := range want {
		if got := b.Next(); got != time.Duration(w)*time.Millisecond {
			t.Fatalf("delay %d = %v, want %d ms", i, got, w)
		}
	}
	b.Reset()
	if got := b.Next(); got != 100*time.Millisecond {
		t.Fatalf("after Reset: %v", got)
	}
}

func TestWaitStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if New(time.Hour, time.Hour).Wait(ctx) {
		t.Fatal("Wait on a cancelled context reported a full delay")
	}
	b := New(time.Nanosecond, time.Nanosecond)
	for i := 0; i < 2; i++ { // the second Wait reuses the timer
		if !b.Wait(context.Background()) {
			t.Fatalf("Wait %d of 1ns did not complete", i)
		}
	}
}

func TestBadBoundsPanic(t *testing.T) {
	for _, c := range [][2]time.Duration{{0, time.Second}, {time.Second, time.Millisecond}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%v, %v) did not panic", c[0], c[1])
				}
			}()
			New(c[0], c[1])
		}()
	}
}
