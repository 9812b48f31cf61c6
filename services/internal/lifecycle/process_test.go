package lifecycle

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/services/internal/obs"
)

// events records what happened, in order, from any goroutine.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	e.got = append(e.got, s)
	e.mu.Unlock()
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

func newProcess() *Process { return New("svc", nil, obs.NewRegistry("svc"), "127.0.0.1:0") }

func ready(context.Context) error { return nil }

func healthz(t *testing.T, p *Process) int {
	t.Helper()
	resp, err := http.Get("http://" + p.MetricsAddr() + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestStopClosesInReverseAfterLoops: a normal stop returns nil, OnStop sees the process stopping
// and /healthz 503, loops return before any dependency closes, and dependencies close in reverse.
func TestStopClosesInReverseAfterLoops(t *testing.T) {
	p, ev := newProcess(), &events{}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	err := p.Run(ctx, func(context.Context) error {
		p.OnClose("redis", func() error { ev.add("close redis"); return nil })
		p.OnClose("kafka", func() error { ev.add("close kafka"); return nil })
		p.Go("worker", func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			ev.add("worker returned")
			return ctx.Err()
		})
		p.OnStarted(func() {
			if code := healthz(t, p); code != http.StatusOK {
				t.Errorf("/healthz while running = %d", code)
			}
			go func() { <-started; cancel() }()
		})
		p.OnStop(func() {
			if !p.Stopping() || healthz(t, p) != http.StatusServiceUnavailable {
				t.Errorf("OnStop: stopping %v", p.Stopping())
			}
			ev.add("on stop")
		})
		return nil
	}, ready)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	got := ev.list()
	if len(got) != 4 || got[2] != "close kafka" || got[3] != "close redis" ||
		!slices.Contains(got[:2], "on stop") || !slices.Contains(got[:2], "worker returned") {
		t.Fatalf("events %v", got)
	}
}

// TestStartFailureClosesWhatWasOpened: a start error is returned as is, after closing what start
// opened (in reverse), and no loop runs.
func TestStartFailureClosesWhatWasOpened(t *testing.T) {
	p, ev := newProcess(), &events{}
	boom := errors.New("redis not durable")
	err := p.Run(context.Background(), func(context.Context) error {
		p.OnClose("a", func() error { ev.add("close a"); return nil })
		p.OnClose("b", func() error { ev.add("close b"); return nil })
		p.Go("never", func(context.Context) error { ev.add("loop ran"); return nil })
		return boom
	}, ready)
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v", err)
	}
	if c, derr := net.Dial("tcp", p.MetricsAddr()); derr == nil {
		c.Close()
		t.Fatalf("/healthz still served on %s after a failed start", p.MetricsAddr())
	}
	if got := ev.list(); !slices.Equal(got, []string{"close b", "close a"}) {
		t.Fatalf("events %v", got)
	}
}

// TestLoopErrorStopsEverything: one failing loop stops the others and is Run's error; a failed
// close is joined into it.
func TestLoopErrorStopsEverything(t *testing.T) {
	p, ev := newProcess(), &events{}
	lost, closeErr := errors.New("lease lost"), errors.New("close refused")
	err := p.Run(context.Background(), func(context.Context) error {
		p.OnClose("conn", func() error { return closeErr })
		p.Go("other", func(ctx context.Context) error { <-ctx.Done(); ev.add("other saw stop"); return ctx.Err() })
		p.Go("lease", func(context.Context) error { return lost })
		return nil
	}, ready)
	if !errors.Is(err, lost) || !errors.Is(err, closeErr) || !strings.Contains(err.Error(), "close conn") {
		t.Fatalf("Run = %v", err)
	}
	if got := ev.list(); !slices.Equal(got, []string{"other saw stop"}) {
		t.Fatalf("events %v", got)
	}
}

// TestGRPCListensOnlyAfterGate: the server binds only once its gate passed, reports the bound
// address, and drains on stop.
func TestGRPCListensOnlyAfterGate(t *testing.T) {
	p := newProcess()
	ctx, cancel := context.WithCancel(context.Background())
	open := make(chan struct{})
	var caught bool
	var mu sync.Mutex
	err := p.Run(ctx, func(context.Context) error {
		p.Serve(GRPC{Server: grpc.NewServer(), Addr: "127.0.0.1:0",
			Gate: func(ctx context.Context) error {
				return Poll(ctx, 1, func() bool { mu.Lock(); defer mu.Unlock(); return caught })
			},
			OnListen: func(addr string) {
				select {
				case <-open:
				default:
					t.Errorf("listening on %s before the gate passed", addr)
				}
				if c, err := net.Dial("tcp", addr); err == nil {
					c.Close()
				} else {
					t.Errorf("dial %s: %v", addr, err)
				}
				cancel()
			}})
		p.OnStarted(func() {
			close(open)
			mu.Lock()
			caught = true
			mu.Unlock()
		})
		return nil
	}, ready)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestPortClashNamesTheVariable: a taken address is an error naming the address and the variable.
func TestPortClashNamesTheVariable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := newProcess()
	err = p.Run(context.Background(), func(context.Context) error {
		p.Serve(GRPC{Server: grpc.NewServer(), Addr: ln.Addr().String(), AddrVar: "QIM_WRITER_LISTEN"})
		return nil
	}, ready)
	var le *ListenError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), "QIM_WRITER_LISTEN") {
		t.Fatalf("Run = %v", err)
	}
}

func TestRunTwiceRefused(t *testing.T) {
	p := newProcess()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = p.Run(ctx, func(context.Context) error { return nil }, ready)
	if err := p.Run(ctx, func(context.Context) error { return nil }, ready); err == nil {
		t.Fatal("second Run accepted")
	}
}
