package session

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// running is one Session service under test with a gRPC client.
type running struct {
	t      *testing.T
	e      *env
	svc    *Service
	cl     internalv1.SessionClient
	cancel context.CancelFunc
	errc   chan error
	done   bool
}

func (e *env) config(mut func(*Config)) Config {
	cfg := Config{RedisAddr: e.redis, KafkaBrokers: e.kafka, ShardCount: e.parts, Topic: e.topic,
		ListenAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", RPC: rpcauth.Config{PlaintextLoopback: true}}
	if mut != nil {
		mut(&cfg)
	}
	return cfg
}

// run starts a service and returns once it serves, or the error Run returned during start-up.
func (e *env) run(mut func(*Config)) (*running, error) {
	e.t.Helper()
	svc, err := New(e.config(mut), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	r := &running{t: e.t, e: e, svc: svc, cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- svc.Run(ctx) }()
	for svc.GRPCAddr() == "" {
		select {
		case err := <-r.errc:
			cancel()
			r.done = true
			return nil, err
		case <-time.After(10 * time.Millisecond):
		}
	}
	cc, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cc.Close() })
	r.cl = internalv1.NewSessionClient(cc)
	e.t.Cleanup(func() {
		if err := r.stop(); err != nil {
			e.t.Errorf("session service stopped with: %v", err)
		}
	})
	return r, nil
}

func (e *env) mustRun(mut func(*Config)) *running {
	e.t.Helper()
	r, err := e.run(mut)
	if err != nil {
		e.t.Fatalf("session service did not start: %v", err)
	}
	return r
}

func (r *running) stop() error {
	if r.done {
		return nil
	}
	r.done = true
	r.cancel()
	return <-r.errc
}

// page asks for one page as the gateway would.
func (r *running) page(u contract.UserID, token []byte, limit uint32) *internalv1.PullSessionListOutcome {
	r.t.Helper()
	raw, _ := proto.Marshal(&qimv1.PullSessionList{PageToken: token, Limit: limit})
	tb := r.e.tenant.Bytes()
	out, err := r.cl.PullSessionList(r.e.ctx, &internalv1.AuthenticatedPullSessionList{TenantId: tb[:], UserId: uint64(u),
		DeviceId: "d", PullSessionList: raw})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// list pages through the user's whole list and fails the test on any error answer.
func (r *running) list(u contract.UserID) []*qimv1.SessionEntry {
	r.t.Helper()
	var all []*qimv1.SessionEntry
	var token []byte
	for {
		out := r.page(u, token, 100)
		if out.GetErrorCode() != 0 {
			r.t.Fatalf("PullSessionList: %s %s", contract.ErrorCode(out.GetErrorCode()), out.GetErrorMessage())
		}
		all = append(all, out.GetBatch().GetSessions()...)
		if !out.GetBatch().GetHasMore() {
			return all
		}
		token = out.GetBatch().GetNextPageToken()
	}
}

func (r *running) markRead(u contract.UserID, conv contract.ConversationID, seq uint64) *internalv1.MarkReadOutcome {
	r.t.Helper()
	cb := conv.Bytes()
	raw, _ := proto.Marshal(&qimv1.MarkRead{ConversationId: cb[:], ReadConversationSeq: seq})
	tb := r.e.tenant.Bytes()
	out, err := r.cl.MarkRead(r.e.ctx, &internalv1.AuthenticatedMarkRead{TenantId: tb[:], UserId: uint64(u), DeviceId: "d", MarkRead: raw})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// entryOf finds conv in a list.
func findEntry(list []*qimv1.SessionEntry, conv contract.ConversationID) *qimv1.SessionEntry {
	cb := conv.Bytes()
	for _, s := range list {
		if string(s.GetConversationId()) == string(cb[:]) {
			return s
		}
	}
	return nil
}

// eventually polls cond until it holds or fails the test after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
