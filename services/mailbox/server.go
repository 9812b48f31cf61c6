package mailbox

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// grpcServer adapts the Service to the generated Mailbox service. Failures travel in the
// outcome as contract error codes; the gRPC status stays OK so the gateway forwards the code.
type grpcServer struct {
	internalv1.UnimplementedMailboxServer
	s *Service
}

func (g grpcServer) PullMailbox(ctx context.Context, in *internalv1.AuthenticatedPullMailbox) (*internalv1.PullMailboxOutcome, error) {
	start := time.Now()
	batch, err := g.s.pull(ctx, in)
	g.s.m.pullLatency.Observe(float64(time.Since(start).Microseconds()))
	if err != nil {
		result := "error"
		if codeOf(err) == contract.ErrCodeInvalidArgument {
			result = "invalid"
		}
		g.s.m.pulls.WithLabelValues(result).Inc()
		return &internalv1.PullMailboxOutcome{ErrorCode: uint32(codeOf(err)), ErrorMessage: err.Error()}, nil
	}
	result := "ok"
	if batch.GetCursorExpired() {
		result = "expired"
	}
	g.s.m.pulls.WithLabelValues(result).Inc()
	return &internalv1.PullMailboxOutcome{Batch: batch}, nil
}

func (g grpcServer) HasOffline(ctx context.Context, in *internalv1.OfflineQuery) (*internalv1.OfflineAnswer, error) {
	has, err := g.s.hasOffline(ctx, in)
	if err != nil {
		// OfflineAnswer has no error field: the contract code travels as the gRPC status.
		code := codes.Unavailable
		if codeOf(err) == contract.ErrCodeInvalidArgument {
			code = codes.InvalidArgument
		}
		return nil, status.Error(code, err.Error())
	}
	return &internalv1.OfflineAnswer{HasOfflineData: has}, nil
}
