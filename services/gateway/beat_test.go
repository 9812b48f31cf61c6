package gateway

import (
	"testing"
	"time"
)

// The schedule the seed describes, from the default start of 60 s: three PINGs a full interval
// apart grow the interval by 30 s, up to 120 s in the foreground and 240 s in the background;
// the foreground brings it back to its cap at once; early PINGs neither count nor reset.
func TestBeatAdaptsToTheAppState(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	b := newBeat(60*time.Second, 150*time.Second, true, t0)
	now := t0
	step := func(gap time.Duration, fg bool) time.Duration {
		now = now.Add(gap)
		iv, to := b.ping(now, fg)
		if to != iv*5/2 {
			t.Fatalf("timeout %v for interval %v, want 2.5 ×", to, iv)
		}
		return iv
	}
	want := func(what string, got, want time.Duration) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: interval %v, want %v", what, got, want)
		}
	}
	want("first on-time PING", step(60*time.Second, false), 60*time.Second)
	want("second", step(60*time.Second, false), 60*time.Second)
	want("third grows", step(60*time.Second, false), 90*time.Second)
	want("a probe 5 s later counts nothing", step(5*time.Second, false), 90*time.Second)
	for range 3 {
		step(90*time.Second, false)
	}
	want("three at 90 s", b.interval, 120*time.Second)
	for range 12 {
		step(b.interval, false)
	}
	want("background cap", b.interval, 240*time.Second)
	want("the app comes to the foreground", step(time.Second, true), 120*time.Second)
	for range 6 {
		step(b.interval, true)
	}
	want("foreground cap", b.interval, 120*time.Second)
}

// A short start keeps the seed's proportions; a fixed schedule never moves.
func TestBeatScalesAndCanBeFixed(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	b := newBeat(time.Second, 2500*time.Millisecond, true, t0)
	now := t0
	for range 30 {
		now = now.Add(b.interval)
		b.ping(now, true)
	}
	if b.interval != 2*time.Second {
		t.Errorf("foreground cap from a 1 s start = %v, want 2s", b.interval)
	}
	f := newBeat(time.Minute, 150*time.Second, false, t0)
	for i := range 30 {
		if iv, to := f.ping(t0.Add(time.Duration(i+1)*time.Minute), false); iv != time.Minute || to != 150*time.Second {
			t.Fatalf("fixed schedule moved to %v / %v", iv, to)
		}
	}
}
