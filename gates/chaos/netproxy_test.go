package chaos

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

// echoServer answers every line with itself until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends one line on c and reads one back.
func roundTrip(c net.Conn, r *bufio.Reader) (string, error) {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

// TestLinkShapesAndHeals: a link passes bytes, a reset toxic cuts its connection at the first
// bytes, and clearing the link lets a new connection through again. A proxy that ignored its
// toxics, or a clear that left them, fails here.
func TestLinkShapesAndHeals(t *testing.T) {
	n := newNetLinks()
	defer n.stop()
	at, err := n.proxy("x→echo", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", at)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, bufio.NewReader(c)
	}
	c, r := dial()
	if got, err := roundTrip(c, r); err != nil || got != "ping\n" {
		t.Fatalf("through the clean link: %q, %v", got, err)
	}
	if err := n.add("x→echo", toxic{Name: "reset", Type: "reset_peer", Stream: "upstream",
		Attributes: map[string]any{"timeout": 0}}); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(c, r); err == nil {
		t.Fatalf("the reset link answered %q", got)
	}
	if err := n.clear(context.Background(), "x→echo"); err != nil {
		t.Fatal(err)
	}
	c, r = dial()
	if got, err := roundTrip(c, r); err != nil || got != "ping\n" {
		t.Fatalf("after the heal: %q, %v", got, err)
	}
	if err := n.add("y", toxic{Name: "z", Type: "latency"}); !errors.Is(err, ErrNoLink) {
		t.Fatalf("an undeclared link: %v, want ErrNoLink", err)
	}
	var none *netLinks
	if err := none.clear(context.Background(), "x→echo"); !errors.Is(err, ErrNoLink) {
		t.Fatalf("a cell without links: %v, want ErrNoLink", err)
	}
}
