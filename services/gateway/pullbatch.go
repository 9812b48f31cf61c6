package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Pull batching bounds (not contract values: they shape gateway→mailbox traffic only).
const (
	// pullBatchMax is the most pulls one PullMailboxBatch carries (the MailboxNode accepts 4,096).
	pullBatchMax = 512
	// pullBatchInflight is how many batches may be on the wire at once. While all are out, new
	// pulls queue and ride the next batch: that queueing is the batching, with no timer.
	pullBatchInflight = 4
	// pullBatchQueue bounds pulls waiting for a batch; a full queue makes Do wait (each
	// connection has one pull in flight, so this is reached only with more connections than it).
	pullBatchQueue = 8192
)

// errBatcherStopped answers pulls still queued when the gateway stops.
var errBatcherStopped = errors.New("gateway: pull batcher stopped")

// pullBatcher coalesces the PULL_MAILBOX calls of all connections into PullMailboxBatch RPCs:
// one gRPC call and one MailboxNode Redis round trip for every pull that arrived while the
// previous batches were in flight, instead of one of each per pull.
//
// Invariants: every caller gets exactly its own pull's outcome (outcome i answers pull i, and a
// reply with the wrong number of outcomes fails the whole batch); an RPC error fails every pull
// of that batch with the error, so each connection answers UNAVAILABLE as for a unary failure;
// at most pullBatchInflight batches are in flight; an idle gateway sends a lone pull at once.
// A MailboxNode without PullMailboxBatch (a rolling upgrade) is served pull by pull.
//
// Rejected: a linger timer that waits to fill a batch. It adds its whole delay at low load,
// where batching saves nothing, and the in-flight bound already batches under load.
type pullBatcher struct {
	client  internalv1.MailboxClient
	timeout time.Duration
	size    prometheus.Histogram // pulls per batch

	reqs  chan *pullCall
	slots chan struct{}
	done  chan struct{}
}

type pullCall struct {
	in  *internalv1.AuthenticatedPullMailbox
	out chan pullAnswer // buffered 1: a sender never blocks on a caller that gave up
}

type pullAnswer struct {
	outcome *internalv1.PullMailboxOutcome
	err     error
}

func newPullBatcher(client internalv1.MailboxClient, timeout time.Duration, size prometheus.Histogram) *pullBatcher {
	return &pullBatcher{client: client, timeout: timeout, size: size, reqs: make(chan *pullCall, pullBatchQueue),
		slots: make(chan struct{}, pullBatchInflight), done: make(chan struct{})}
}

// Do pulls through the next batch. It returns ctx's error if ctx ends first (the pull may still
// run; storing a cursor is forward-only, so that is harmless).
func (b *pullBatcher) Do(ctx context.Context, in *internalv1.AuthenticatedPullMailbox) (*internalv1.PullMailboxOutcome, error) {
	call := &pullCall{in: in, out: make(chan pullAnswer, 1)}
	select {
	case b.reqs <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.done:
		return nil, errBatcherStopped
	}
	select {
	case a := <-call.out:
		return a.outcome, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.done:
		return nil, errBatcherStopped
	}
}

// run cuts batches until ctx ends: it takes a send slot, then everything queued (up to
// pullBatchMax), and sends it on its own goroutine.
func (b *pullBatcher) run(ctx context.Context) {
	defer close(b.done)
	for {
		var first *pullCall
		select {
		case first = <-b.reqs:
		case <-ctx.Done():
			return
		}
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			first.out <- pullAnswer{err: errBatcherStopped}
			return
		}
		batch := b.take(first)
		go func() {
			defer func() { <-b.slots }()
			b.send(ctx, batch)
		}()
	}
}

// take returns first plus whatever is queued now, up to pullBatchMax.
func (b *pullBatcher) take(first *pullCall) []*pullCall {
	batch := []*pullCall{first}
	for len(batch) < pullBatchMax {
		select {
		case c := <-b.reqs:
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
}

func (b *pullBatcher) send(ctx context.Context, batch []*pullCall) {
	b.size.Observe(float64(len(batch)))
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req := &internalv1.PullMailboxBatchRequest{Pulls: make([]*internalv1.AuthenticatedPullMailbox, len(batch))}
	for i, c := range batch {
		req.Pulls[i] = c.in
	}
	out, err := b.client.PullMailboxBatch(ctx, req)
	if status.Code(err) == codes.Unimplemented {
		b.sendEach(ctx, batch)
		return
	}
	if err == nil && len(out.GetOutcomes()) != len(batch) {
		err = fmt.Errorf("gateway: mailbox answered %d outcomes for %d pulls", len(out.GetOutcomes()), len(batch))
	}
	for i, c := range batch {
		if err != nil {
			c.out <- pullAnswer{err: err}
			continue
		}
		c.out <- pullAnswer{outcome: out.GetOutcomes()[i]}
	}
}

// sendEach is the fallback for a MailboxNode that predates PullMailboxBatch.
func (b *pullBatcher) sendEach(ctx context.Context, batch []*pullCall) {
	for _, c := range batch {
		o, err := b.client.PullMailbox(ctx, c.in)
		c.out <- pullAnswer{outcome: o, err: err}
	}
}
