package session

import (
	"context"
	"errors"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// grpcServer adapts the Service to the generated Session service. Every outcome is either a
// complete answer or an error code from the contract table; a Go error is returned to gRPC only
// when the service is gone, so the gateway can tell "refused" from "unreachable".
type grpcServer struct {
	internalv1.UnimplementedSessionServer
	s *Service
}

func (g grpcServer) PullSessionList(ctx context.Context, in *internalv1.AuthenticatedPullSessionList) (*internalv1.PullSessionListOutcome, error) {
	start := time.Now()
	b, err := g.s.pullSessionList(ctx, in)
	if code, msg := g.s.outcome("pull_session_list", start, err); code != contract.ErrCodeUnspecified {
		return &internalv1.PullSessionListOutcome{ErrorCode: uint32(code), ErrorMessage: msg}, nil
	}
	return &internalv1.PullSessionListOutcome{Batch: b}, nil
}

func (g grpcServer) MarkRead(ctx context.Context, in *internalv1.AuthenticatedMarkRead) (*internalv1.MarkReadOutcome, error) {
	start := time.Now()
	out, err := g.s.markRead(ctx, in)
	if code, msg := g.s.outcome("mark_read", start, err); code != contract.ErrCodeUnspecified {
		return &internalv1.MarkReadOutcome{ErrorCode: uint32(code), ErrorMessage: msg}, nil
	}
	return out, nil
}

// outcome counts a request and turns its error into a client code and message (rpc.CodeOf and
// rpc.ClientMessage). A refusal keeps its message; other failures are logged here and answered
// with a generic message, so storage details never reach a client.
func (s *Service) outcome(op string, start time.Time, err error) (contract.ErrorCode, string) {
	s.m.latency.WithLabelValues(op).Observe(float64(time.Since(start).Microseconds()))
	code := rpc.CodeOf(err)
	s.m.requests.WithLabelValues(op, code.String()).Inc()
	var re *rpc.RequestError
	if err != nil && !errors.As(err, &re) {
		s.log.Warn("session: request failed", "op", op, "code", code.String(), "err", err)
	}
	return code, rpc.ClientMessage(err)
}

// ownedIdentity is identityOf for a user this instance serves. A user of a shard it does not own
// is refused UNAVAILABLE (retryable): only the owner projects the user's records, so only its
// snapshot is kept fresh by dirty markers, and another instance would answer from a stale or
// empty snapshot. It happens while shards move between instances by restart and the gateways'
// routing lags, so the gateway's retry reaches the owner.
func (s *Service) ownedIdentity(tenant []byte, user uint64) (userKey, error) {
	k, err := identityOf(tenant, user)
	if err != nil {
		return userKey{}, err
	}
	if shard := s.cfg.shards().UserShard(k.tenant, k.user); !s.cfg.OwnedShards.Contains(shard) {
		s.m.unowned.Inc()
		return userKey{}, rpc.Refuse(contract.ErrCodeUnavailable,
			"shard %d is not owned by this SessionProjection instance: the request was routed to the wrong instance; retry", shard)
	}
	return k, nil
}

func (g grpcServer) SetReadReceipts(ctx context.Context, in *internalv1.AuthenticatedSetReadReceipts) (*internalv1.SetReadReceiptsOutcome, error) {
	start := time.Now()
	a, err := g.s.setReadReceipts(ctx, in)
	if code, msg := g.s.outcome("set_read_receipts", start, err); code != contract.ErrCodeUnspecified {
		return &internalv1.SetReadReceiptsOutcome{ErrorCode: uint32(code), ErrorMessage: msg}, nil
	}
	return &internalv1.SetReadReceiptsOutcome{Answer: a}, nil
}

func (g grpcServer) PullReadReceipts(ctx context.Context, in *internalv1.AuthenticatedPullReadReceipts) (*internalv1.PullReadReceiptsOutcome, error) {
	start := time.Now()
	b, err := g.s.pullReadReceipts(ctx, in)
	if code, msg := g.s.outcome("pull_read_receipts", start, err); code != contract.ErrCodeUnspecified {
		return &internalv1.PullReadReceiptsOutcome{ErrorCode: uint32(code), ErrorMessage: msg}, nil
	}
	return &internalv1.PullReadReceiptsOutcome{Batch: b}, nil
}
