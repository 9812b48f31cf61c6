package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// The fakes implement the generated server interfaces of the writer, the mailbox and the session
// service. They stand
// in for services (which the gateway talks to over gRPC), never for Redis or Kafka: the
// gateway's own store, the session_epoch Redis, is the real one from itest.

// fakeWriter records every AuthenticatedSend and answers by policy.
type fakeWriter struct {
	internalv1.UnimplementedWriterServer
	received chan *internalv1.AuthenticatedSend
	// manual: each value on release answers the oldest unanswered send; otherwise answer at once.
	manual  bool
	release chan struct{}
	// errCode, when set, answers every send with this error instead of an ACK.
	errCode atomic.Uint32
	// dropStream, when set, ends the stream right after receiving a send, unanswered.
	dropStream atomic.Bool
	// bogus, when set, first answers a call_id the gateway never used.
	bogus    atomic.Bool
	streams  atomic.Int32
	answered atomic.Int32 // outcomes sent while the stream was still live
	seq      atomic.Uint64
	history  func(*internalv1.AuthenticatedPullHistory) *internalv1.PullHistoryOutcome
}

func newFakeWriter(manual bool) *fakeWriter {
	return &fakeWriter{received: make(chan *internalv1.AuthenticatedSend, 1024), manual: manual, release: make(chan struct{}, 1024)}
}

func (f *fakeWriter) SendStream(stream internalv1.Writer_SendStreamServer) error {
	f.streams.Add(1)
	ctx := stream.Context()
	inbox := make(chan *internalv1.AuthenticatedSend, 4096)
	go func() { // keep reading, so only the gateway's own window limits what arrives
		defer close(inbox)
		for {
			in, err := stream.Recv()
			if err != nil {
				return
			}
			select { // tests read the first 1024; benchmarks never read it
			case f.received <- in:
			default:
			}
			inbox <- in
		}
	}()
	for in := range inbox {
		if f.dropStream.Load() {
			return errors.New("fake writer: stream dropped")
		}
		if f.manual {
			select {
			case <-f.release:
			case <-ctx.Done():
				return nil
			}
		}
		if f.bogus.Load() {
			if err := stream.Send(&internalv1.SendOutcome{CallId: 1 << 60, ErrorCode: 9}); err != nil {
				return err
			}
		}
		if err := stream.Send(f.outcome(in)); err != nil {
			return err
		}
		if ctx.Err() == nil {
			f.answered.Add(1)
		}
	}
	return nil
}

// outcome builds the answer to in: an ACK echoing its client_message_id, or the set error.
func (f *fakeWriter) outcome(in *internalv1.AuthenticatedSend) *internalv1.SendOutcome {
	if code := f.errCode.Load(); code != 0 {
		return &internalv1.SendOutcome{CallId: in.GetCallId(), ErrorCode: code, ErrorMessage: "fake writer refused"}
	}
	var req qimv1.SendRequest
	_ = proto.Unmarshal(in.GetSendRequest(), &req)
	seq := f.seq.Add(1)
	mid := make([]byte, 16)
	binary.BigEndian.PutUint64(mid[8:], seq)
	return &internalv1.SendOutcome{CallId: in.GetCallId(), Ack: &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(),
		MessageId: mid, ConversationId: mid, ConversationSeq: seq, CommittedAtMs: 1700000000000}}
}

func (f *fakeWriter) PullHistory(_ context.Context, in *internalv1.AuthenticatedPullHistory) (*internalv1.PullHistoryOutcome, error) {
	if f.history != nil {
		return f.history(in), nil
	}
	return &internalv1.PullHistoryOutcome{Batch: &qimv1.HistoryBatch{}}, nil
}

// fakeMailbox answers HasOffline from a flag and PullMailbox from a function.
type fakeMailbox struct {
	internalv1.UnimplementedMailboxServer
	offline    atomic.Bool
	failOnline atomic.Bool // HasOffline fails (mailbox "unreachable")
	mu         sync.Mutex
	queries    []*internalv1.OfflineQuery
	pull       func(*internalv1.AuthenticatedPullMailbox) *internalv1.PullMailboxOutcome
	pulls      atomic.Int32
	// sessionPush receives PushSession targets (nil: Unimplemented, as before read sync).
	sessionPush func(*internalv1.PushTarget)
}

func (f *fakeMailbox) PushSession(_ context.Context, t *internalv1.PushTarget) (*internalv1.PushSessionAck, error) {
	if f.sessionPush == nil {
		return nil, errors.New("fake mailbox: no PushSession")
	}
	f.sessionPush(t)
	return &internalv1.PushSessionAck{}, nil
}

func (f *fakeMailbox) HasOffline(_ context.Context, q *internalv1.OfflineQuery) (*internalv1.OfflineAnswer, error) {
	if f.failOnline.Load() {
		return nil, errors.New("fake mailbox: unavailable")
	}
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	return &internalv1.OfflineAnswer{HasOfflineData: f.offline.Load()}, nil
}

func (f *fakeMailbox) lastQuery() *internalv1.OfflineQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return nil
	}
	return f.queries[len(f.queries)-1]
}

func (f *fakeMailbox) PullMailbox(_ context.Context, in *internalv1.AuthenticatedPullMailbox) (*internalv1.PullMailboxOutcome, error) {
	f.pulls.Add(1)
	if f.pull != nil {
		return f.pull(in), nil
	}
	return &internalv1.PullMailboxOutcome{Batch: &qimv1.MailboxBatch{}}, nil
}

// PullMailboxBatch serves each pull as PullMailbox does (the gateway's batched path); the pull-by-
// pull fallback for a node without it is covered by pullbatch_test.go.
func (f *fakeMailbox) PullMailboxBatch(ctx context.Context, in *internalv1.PullMailboxBatchRequest) (*internalv1.PullMailboxBatchOutcome, error) {
	out := &internalv1.PullMailboxBatchOutcome{}
	for _, p := range in.GetPulls() {
		o, err := f.PullMailbox(ctx, p)
		if err != nil {
			return nil, err
		}
		out.Outcomes = append(out.Outcomes, o)
	}
	return out, nil
}

// fakeSession answers PullSessionList and MarkRead from functions (default: an empty batch / an
// ack echoing the request).
type fakeSession struct {
	internalv1.UnimplementedSessionServer
	list func(*internalv1.AuthenticatedPullSessionList) *internalv1.PullSessionListOutcome
	mark func(*internalv1.AuthenticatedMarkRead) *internalv1.MarkReadOutcome
}

func (f *fakeSession) PullSessionList(_ context.Context, in *internalv1.AuthenticatedPullSessionList) (*internalv1.PullSessionListOutcome, error) {
	if f.list != nil {
		return f.list(in), nil
	}
	return &internalv1.PullSessionListOutcome{Batch: &qimv1.SessionListBatch{}}, nil
}

func (f *fakeSession) MarkRead(_ context.Context, in *internalv1.AuthenticatedMarkRead) (*internalv1.MarkReadOutcome, error) {
	if f.mark != nil {
		return f.mark(in), nil
	}
	var req qimv1.MarkRead
	_ = proto.Unmarshal(in.GetMarkRead(), &req)
	return &internalv1.MarkReadOutcome{Ack: &qimv1.MarkReadAck{ConversationId: req.GetConversationId(),
		ReadConversationSeq: req.GetReadConversationSeq()}}, nil
}

// serveGRPC starts a gRPC server with register on a loopback port and returns its address.
func serveGRPC(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	register(gs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}
