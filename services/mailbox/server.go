package mailbox

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// grpcServer adapts the Service to the generated Mailbox service. Failures travel in the
// outcome as contract error codes; the gRPC status stays OK so the gateway forwards the code.
type grpcServer struct {
	internalv1.UnimplementedMailboxServer
	s *Service
}

func (g grpcServer) PullMailbox(ctx context.Context, in *internalv1.AuthenticatedPullMailbox) (*internalv1.PullMailboxOutcome, error) {
	return g.outcomes(ctx, []*internalv1.AuthenticatedPullMailbox{in})[0], nil
}

// maxPullBatch bounds the pulls of one PullMailboxBatch: a gateway coalesces at most its own
// in-flight pulls, and a runaway batch must not become one giant Redis pipeline.
const maxPullBatch = 4096

func (g grpcServer) PullMailboxBatch(ctx context.Context, in *internalv1.PullMailboxBatchRequest) (*internalv1.PullMailboxBatchOutcome, error) {
	n := len(in.GetPulls())
	if n == 0 || n > maxPullBatch {
		return nil, status.Errorf(codes.InvalidArgument, "mailbox: a pull batch holds 1..%d pulls, got %d", maxPullBatch, n)
	}
	g.s.m.pullBatchSize.Observe(float64(n))
	return &internalv1.PullMailboxBatchOutcome{Outcomes: g.outcomes(ctx, in.GetPulls())}, nil
}

// outcomes serves pulls with one store round trip and counts each by result. A client sees a
// refusal's own message or rpc.ClientMessage's generic one, never storage details or addresses;
// those are logged here instead.
func (g grpcServer) outcomes(ctx context.Context, ins []*internalv1.AuthenticatedPullMailbox) []*internalv1.PullMailboxOutcome {
	start := time.Now()
	batches, errs := g.s.pullMany(ctx, ins)
	took := float64(time.Since(start).Microseconds())
	out := make([]*internalv1.PullMailboxOutcome, len(ins))
	for i, err := range errs {
		g.s.m.pullLatency.Observe(took)
		if err != nil {
			code := rpc.CodeOf(err)
			result := "error"
			switch {
			case code == contract.ErrCodeInvalidArgument:
				result = "invalid"
			case errors.Is(err, errNotOwned):
				result = "unowned" // the routing's fault, already in qim_mailbox_unowned_requests_total
			}
			g.s.m.pulls.WithLabelValues(result).Inc()
			out[i] = &internalv1.PullMailboxOutcome{ErrorCode: uint32(code), ErrorMessage: rpc.ClientMessage(err)}
			continue
		}
		result := "ok"
		if batches[i].GetCursorExpired() {
			result = "expired"
		}
		g.s.m.pulls.WithLabelValues(result).Inc()
		out[i] = &internalv1.PullMailboxOutcome{Batch: batches[i]}
	}
	g.logFailures(errs)
	return out
}

// logFailures logs when pulls start failing for another reason than the client's own request
// (with the first cause) and when they recover, not every failed call: during a Redis outage
// every call fails alike, and qim_mailbox_pulls_total{result="error"} counts them.
func (g grpcServer) logFailures(errs []error) {
	var first error
	served := false
	for _, err := range errs {
		switch {
		case err == nil:
			served = true
		case first == nil && !clientsFault(err):
			first = err
		}
	}
	switch {
	case first != nil && g.s.pullFailing.CompareAndSwap(false, true):
		g.s.log.Warn("mailbox: pulls failing", "code", rpc.CodeOf(first).String(), "err", first)
	case first == nil && served && g.s.pullFailing.CompareAndSwap(true, false):
		g.s.log.Info("mailbox: pulls recovered")
	}
}

// clientsFault reports a refusal of the request itself (bad input), which is the client's to fix
// and nothing for an operator.
func clientsFault(err error) bool {
	var re *rpc.RequestError
	return errors.As(err, &re) && re.Code != contract.ErrCodeInternal
}

func (g grpcServer) HasOffline(ctx context.Context, in *internalv1.OfflineQuery) (*internalv1.OfflineAnswer, error) {
	has, err := g.s.hasOffline(ctx, in)
	if err != nil {
		// OfflineAnswer has no error field: the contract code travels as the gRPC status.
		code := codes.Unavailable
		if rpc.CodeOf(err) == contract.ErrCodeInvalidArgument {
			code = codes.InvalidArgument
		}
		return nil, status.Error(code, err.Error())
	}
	return &internalv1.OfflineAnswer{HasOfflineData: has}, nil
}
