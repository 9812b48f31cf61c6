package sdk

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// TestReconnectDelays: refused logins never wait longer than loginRetryMax however many come in
// a row; a server hint is honoured with at most a fifth more; connections that fail to open
// still back off to ReconnectMax; AUTH_OK and a refusal reset the network backoff.
func TestReconnectDelays(t *testing.T) {
	cfg := Config{ReconnectMin: 250 * time.Millisecond, ReconnectMax: 30 * time.Second}
	refused := serveEnd{connEnd: connEnd{loginRefused: true}}
	dropped := serveEnd{}

	rc := newReconnect(&cfg)
	for i := range 40 {
		if d := rc.next(refused); d <= 0 || d > loginRetryMax {
			t.Fatalf("refused login %d: delay %v, want (0, %v]", i+1, d, loginRetryMax)
		}
	}
	hinted := serveEnd{connEnd: connEnd{loginRefused: true, retryAfter: 8 * time.Second}}
	for range 20 {
		if d := rc.next(hinted); d < 8*time.Second || d > 8*time.Second+8*time.Second/5 {
			t.Fatalf("hinted refusal: delay %v, want the 8 s hint plus at most a fifth", d)
		}
	}

	rc = newReconnect(&cfg)
	var d time.Duration
	for range 12 {
		d = rc.next(dropped)
	}
	if d < cfg.ReconnectMax/2 {
		t.Fatalf("after 12 failed dials: delay %v, want the network backoff at its %v cap", d, cfg.ReconnectMax)
	}
	if d := rc.next(refused); d > loginRetryMax {
		t.Fatalf("refusal after failed dials: delay %v, want at most %v", d, loginRetryMax)
	}
	if d := rc.next(dropped); d > cfg.ReconnectMin {
		t.Fatalf("drop after a refusal: delay %v, want the network backoff restarted at %v", d, cfg.ReconnectMin)
	}

	small := Config{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 40 * time.Millisecond}
	rc = newReconnect(&small)
	for range 10 {
		if d := rc.next(refused); d > small.ReconnectMax {
			t.Fatalf("refused login with ReconnectMax %v: delay %v", small.ReconnectMax, d)
		}
	}
}

// TestRefusedLoginIsRetriedSoon: a gateway that answers AUTH with UNAVAILABLE (its mailbox does
// not answer yet) is asked again within loginRetryMax, never after the long network backoff,
// and the client logs in once the gateway admits it. With ReconnectMin at 20 s, one network
// backoff step alone would be 10-20 s.
func TestRefusedLoginIsRetriedSoon(t *testing.T) {
	const refusals = 3
	serve := serveAuthAndEmptyMailbox(nil)
	var logins atomic.Int32
	g := startFakeGateway(t, func(conn net.Conn, r *wire.Reader, w *wire.Writer) {
		if logins.Add(1) > refusals {
			serve(conn, r, w)
			return
		}
		m, err := r.ReadMessage()
		if err != nil || m.Opcode != contract.OpAuth {
			return
		}
		reply(w, contract.OpError, m.RequestID, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable),
			Message: "mailbox unavailable", RequestOpcode: uint32(contract.OpAuth)})
	})
	c, err := Open(Config{DataDir: t.TempDir(), Endpoint: contract.Endpoint{Address: g.ln.Addr().String(), Mode: contract.ModeTCP},
		User: self, Device: "d1", Token: StaticToken("tok"), ReconnectMin: 20 * time.Second, ReconnectMax: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range refusals {
		off := waitEvent[Offline](t, c, time.Minute)
		if !off.Retry || off.RetryIn > loginRetryMax {
			t.Fatalf("refusal %d: Offline{Retry: %v, RetryIn: %v}, want a retry within %v (err %v)", i+1, off.Retry, off.RetryIn, loginRetryMax, off.Err)
		}
	}
	waitEvent[Online](t, c, time.Minute)
}
