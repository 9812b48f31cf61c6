// Package ports picks loopback ports for the harness's servers and services.
//
// A picked port is free a moment ago and released before its server binds it, so another socket
// may take it in between. The sockets most likely to are the harness's own outgoing
// connections: every connect() gets a kernel-chosen local port from the ephemeral range, and a
// deployment's processes open dozens while the next process of the same deployment has not yet
// bound its port. So ports are picked below the ephemeral range, where connect() never takes one,
// and a clash needs another program binding that very port on purpose.
//
// Rejected alternative: binding 127.0.0.1:0, which picks from the ephemeral range itself: a chaos
// cell's gateway once failed to start with "address already in use" on a port picked that way.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port picked: below it sit well-known and registered services.
const lowest = 10000

// Pick returns n distinct loopback ports that were free a moment ago, below the kernel's
// ephemeral range (or from it, bound on :0, when the range starts too low to leave room).
func Pick(n int) ([]int, error) {
	low := ephemeralLow()
	if low-lowest < 4*n+1000 {
		return pickEphemeral(n)
	}
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	span := low - lowest
	start := rand.IntN(span)
	out := make([]int, 0, n)
	for i := 0; i < span && len(out) < n; i++ {
		p := lowest + (start+i)%span
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("ports: only %d of %d loopback ports free in %d..%d", len(out), n, lowest, low-1)
	}
	return out, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when the
// setting cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return low
}

func pickEphemeral(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("ports: pick a free loopback port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
