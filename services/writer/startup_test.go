package writer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// TestStartWaitsForAnUnreachableBroker: a writer started while the broker is SIGSTOPped (the
// chaos matrix's rolling restart) neither exits nor serves; /healthz answers 503 naming the
// broker, and once the broker is resumed the writer starts and commits. Before, it exited with
// "metadata for qim.outbox lists no brokers" as soon as the resumed broker first answered.
func TestStartWaitsForAnUnreachableBroker(t *testing.T) {
	st := itest.Stack(t)
	resume := itest.Pause(t, stack.ServerKafka)

	ep := st.Endpoints()
	svc, err := New(Config{RedisAddr: ep.RedisCore, KafkaBrokers: ep.KafkaBrokers, ListenAddr: "127.0.0.1:0",
		MetricsAddr: "127.0.0.1:0", RPC: writerRPC(t)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	done := make(chan struct{})
	go func() { runErr = svc.Run(ctx); close(done) }()
	defer func() {
		cancel()
		resume() // a client closing against a frozen broker waits for it
		<-done
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			t.Errorf("writer stopped with error: %v", runErr)
		}
	}()

	// Wait for the writer to say what it waits for: the broker, by the Outbox's name.
	waitFor(t, done, &runErr, "/healthz to name the broker", func() bool {
		code, body := getHealthz(svc.proc.MetricsAddr())
		return code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for the broker (qim.outbox)")
	})
	if svc.GRPCAddr() != "" {
		t.Fatal("the writer serves while the broker is unreachable")
	}
	resume()
	waitFor(t, done, &runErr, "the writer to serve after the broker came back", func() bool { return svc.GRPCAddr() != "" })

	conn, err := grpc.NewClient(svc.GRPCAddr(), dialAs(t, "gateway"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := &testWriter{svc: svc, client: internalv1.NewWriterClient(conn)}
	a, b := uniqueUsers(t)
	mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("after the wait")}))
}

// waitFor polls cond until it holds, failing t if the writer's Run returned first. The bound is
// a hang guard, not a timing assertion.
func waitFor(t *testing.T, done <-chan struct{}, runErr *error, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		select {
		case <-done:
			t.Fatalf("waiting for %s: the writer exited: %v", what, *runErr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within 2 minutes", what)
		}
	}
}

var healthClient = &http.Client{Timeout: 5 * time.Second}

func getHealthz(addr string) (int, string) {
	if addr == "" {
		return 0, ""
	}
	resp, err := healthClient.Get("http://" + addr + "/healthz")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
