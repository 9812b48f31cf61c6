package ports

import (
	"net"
	"strconv"
	"testing"
)

// Picked ports are distinct, bindable, and outside the range connect() draws local ports from.
func TestPickBelowEphemeralRange(t *testing.T) {
	got, err := Pick(40)
	if err != nil {
		t.Fatal(err)
	}
	low, seen := ephemeralLow(), map[int]bool{}
	for _, p := range got {
		if seen[p] {
			t.Fatalf("port %d picked twice", p)
		}
		seen[p] = true
		if low-lowest >= 4*40+1000 && (p < lowest || p >= low) {
			t.Fatalf("port %d outside %d..%d", p, lowest, low-1)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d was released taken: %v", p, err)
		}
		_ = l.Close()
	}
	if len(got) != 40 {
		t.Fatalf("%d ports, want 40", len(got))
	}
}
