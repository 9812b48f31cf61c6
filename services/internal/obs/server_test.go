package obs

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestHealthzFlipsOnInvariant(t *testing.T) {
	r := NewRegistry("gateway")
	inv := r.Invariant(contract.InvariantGatewaySendOutcomeOrphaned)
	h := NewServer("127.0.0.1:0", r, func(context.Context) error { return nil }).Handler()
	if code, body := get(t, h, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthy: %d %q", code, body)
	}
	inv.Inc()
	code, body := get(t, h, "/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "qim_gateway_send_outcome_orphaned_total = 1") {
		t.Fatalf("after an invariant increment: %d %q, want 503 naming the counter", code, body)
	}
}

func TestHealthzReadiness(t *testing.T) {
	r := NewRegistry("writer")
	readyErr := errors.New("outbox: topic missing; redis://admin:hunter2@10.0.0.1:6379 password=hunter2")
	h := NewServer("127.0.0.1:0", r, func(context.Context) error { return readyErr }).Handler()
	code, body := get(t, h, "/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: outbox: topic missing") {
		t.Fatalf("readiness error: %d %q", code, body)
	}
	if strings.Contains(body, "hunter2") {
		t.Fatalf("/healthz leaked a credential: %q", body)
	}
	slow := NewServer("127.0.0.1:0", r, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		WithReadyTimeout(50*time.Millisecond)).Handler()
	if code, body := get(t, slow, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "deadline") {
		t.Fatalf("hung readiness: %d %q, want 503 after the ready timeout", code, body)
	}
}

func TestSafeReason(t *testing.T) {
	tests := []struct{ in, want string }{
		{"dial tcp 127.0.0.1:9092: connection refused", "dial tcp 127.0.0.1:9092: connection refused"},
		{"redis://u:p@host:6379 down", "redis://***@host:6379 down"},
		{"auth failed token=abc.def", "auth failed token=***"},
		{"line one\nline two", "line one line two"},
		{strings.Repeat("é", 400), strings.Repeat("é", 256) + "…"},
	}
	for _, tc := range tests {
		if got := safeReason(tc.in); got != tc.want {
			t.Errorf("safeReason(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
}

func TestServerServesAndShutsDown(t *testing.T) {
	r := NewRegistry("session")
	r.Counter("qim_session_pulls_total", "pulls").Inc()
	s := NewServer("127.0.0.1:0", r, func(context.Context) error { return nil })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr()
	for path, want := range map[string]string{
		"/metrics":      `qim_session_pulls_total{service="session"} 1`,
		"/healthz":      "ok",
		"/debug/pprof/": "goroutine",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s = %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	resp, err := http.Get(base + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("cmdline must not be served: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("server still answers after Shutdown")
	}
}

func TestStartPortClash(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := NewServer(ln.Addr().String(), NewRegistry("gateway"), func(context.Context) error { return nil })
	err = s.Start()
	var le *ListenError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Start on a taken port = %v, want *ListenError wrapping EADDRINUSE", err)
	}
	if msg := err.Error(); !strings.Contains(msg, ln.Addr().String()) || !strings.Contains(msg, "different metrics address") {
		t.Fatalf("error does not name the address and the fix: %q", msg)
	}
}

func TestNewServerNeedsReadiness(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewServer without a readiness check did not panic")
		}
	}()
	NewServer("127.0.0.1:0", NewRegistry("archiver"), nil)
}
