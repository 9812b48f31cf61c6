package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
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
