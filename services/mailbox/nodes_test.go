package mailbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
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

// node is an in-process MailboxNode against the stack.
type node struct {
	svc    *Service
	client internalv1.MailboxClient
	errc   chan error
	cancel context.CancelFunc
	once   sync.Once
	err    error
}

func (e *env) config(shards ...uint32) Config {
	return Config{RedisAddr: e.ep.redis, KafkaBrokers: e.ep.kafka, ShardCount: int(e.shards), OwnedShards: shards,
		ListenAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", RPC: rpcauth.Config{PlaintextLoopback: true}}
}

// start runs a node with cfg and waits until it serves (every shard caught up).
func (e *env) start(cfg Config) *node {
	e.t.Helper()
	n, err := e.launch(cfg)
	if err != nil {
		e.t.Fatalf("node did not start: %v", err)
	}
	return n
}

// launch runs a node and returns once it serves, or with Run's error if it stops first.
func (e *env) launch(cfg Config) (*node, error) {
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{svc: svc, errc: make(chan error, 1), cancel: cancel}
	go func() { n.errc <- svc.Run(ctx) }()
	deadline := time.After(60 * time.Second)
	for svc.GRPCAddr() == "" {
		select {
		case err := <-n.errc:
			cancel()
			return nil, errors.Join(errors.New("run returned before serving"), err)
		case <-deadline:
			cancel()
			return nil, errors.New("not serving within 60 s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	conn, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		return nil, err
	}
	n.client = internalv1.NewMailboxClient(conn)
	e.t.Cleanup(func() {
		if err := n.stop(); err != nil && !e.t.Failed() {
			e.t.Errorf("node stopped with error: %v", err)
		}
		conn.Close()
	})
	return n, nil
}

// stop cancels the node and returns Run's error (once; later calls return the same).
func (n *node) stop() error {
	n.once.Do(func() {
		n.cancel()
		n.err = <-n.errc
	})
	return n.err
}

// pull sends PULL_MAILBOX for (user, device) with cursor and returns the batch.
func (e *env) pull(n *node, u contract.UserID, device string, cursor contract.MailboxSeq) *qimv1.MailboxBatch {
	e.t.Helper()
	o := e.pullOutcome(n, u, device, &qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: uint64(cursor)}})
	if o.GetErrorCode() != 0 {
		e.t.Fatalf("pull: %s %s", contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage())
	}
	return o.GetBatch()
}

func (e *env) pullOutcome(n *node, u contract.UserID, device string, req *qimv1.PullMailbox) *internalv1.PullMailboxOutcome {
	e.t.Helper()
	raw, err := proto.Marshal(req)
	if err != nil {
		e.t.Fatal(err)
	}
	tb := e.tenant.Bytes()
	o, err := n.client.PullMailbox(e.ctx, &internalv1.AuthenticatedPullMailbox{TenantId: tb[:], UserId: uint64(u),
		DeviceId: device, PullMailbox: raw})
	if err != nil {
		e.t.Fatalf("PullMailbox rpc: %v", err)
	}
	return o
}

func (e *env) hasOffline(n *node, u contract.UserID, cursor contract.MailboxSeq) bool {
	e.t.Helper()
	tb := e.tenant.Bytes()
	a, err := n.client.HasOffline(e.ctx, &internalv1.OfflineQuery{TenantId: tb[:], UserId: uint64(u), DeviceId: "d", Cursor: uint64(cursor)})
	if err != nil {
		e.t.Fatalf("HasOffline: %v", err)
	}
	return a.GetHasOfflineData()
}

// stopWhenDone waits for Run to return by itself (a failure) and returns its error.
func (n *node) stopWhenDone(t testing.TB) error {
	t.Helper()
	select {
	case err := <-n.errc:
		n.once.Do(n.cancel) // the test owns this error; cleanup has nothing left to report
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("node did not stop by itself")
		return nil
	}
}
