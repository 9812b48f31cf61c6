package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/qim-dev/qim/gates/itest"
)

// TestStartRefusesTakenPortNamingTheVariable: a client port already in use fails start-up with
// an error naming the address and the variable that sets it, and Run returns (everything it had
// opened is closed, nothing keeps running).
func TestStartRefusesTakenPortNamingTheVariable(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := validConfig()
	cfg.RedisAddr = itest.Endpoints(t).RedisCore
	cfg.ListenAddr, cfg.PushListenAddr, cfg.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.WSListenAddr = taken.Addr().String()
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = svc.Run(context.Background())
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "QIM_GATEWAY_WS_LISTEN") ||
		!strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("Run with the WebSocket port taken = %v", err)
	}
	select {
	case <-svc.Ready():
		t.Fatal("Ready closed although start-up failed")
	default:
	}
}

// flakyListener fails Accept with errs in turn, then reports itself closed.
type flakyListener struct {
	net.Listener
	errs  []error
	calls atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	i := int(l.calls.Add(1)) - 1
	if i < len(l.errs) {
		return nil, l.errs[i]
	}
	return nil, net.ErrClosed
}

func TestAcceptRetriesTransientErrors(t *testing.T) {
	svc, err := New(validConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	ln := &flakyListener{errs: []error{emfile, emfile, os.ErrDeadlineExceeded}}
	if err := svc.acceptTCP(context.Background(), ln); err != nil || ln.calls.Load() != 4 {
		t.Fatalf("acceptTCP = %v after %d accepts, want nil after retrying 3 transient failures", err, ln.calls.Load())
	}
	fatal := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EINVAL)}
	ln = &flakyListener{errs: []error{fatal}}
	if err := svc.acceptTCP(context.Background(), ln); !errors.Is(err, syscall.EINVAL) || ln.calls.Load() != 1 {
		t.Fatalf("acceptTCP on a non-transient failure = %v after %d accepts", err, ln.calls.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ln = &flakyListener{errs: []error{emfile, emfile}}
	if err := svc.acceptTCP(ctx, ln); err != nil || ln.calls.Load() != 1 {
		t.Fatalf("acceptTCP stopping = %v after %d accepts, want nil without retrying", err, ln.calls.Load())
	}
}
