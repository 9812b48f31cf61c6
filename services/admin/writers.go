package admin

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// writers calls GroupAdmin on the first writer that answers. Every writer serves every group
// (GroupAdmin commits through the group's owner), so a writer that is down is skipped, not
// waited for.
type writers struct {
	conns[internalv1.GroupAdminClient]
}

func dialWriters(addrs []string, creds grpc.DialOption) (*writers, error) {
	c, err := dialAll("writer", addrs, creds, internalv1.NewGroupAdminClient)
	if err != nil {
		return nil, err
	}
	return &writers{conns: c}, nil
}

// AdminGroup tries each writer while the previous one is unreachable. An answer, a refusal
// included, ends the search: a create is idempotent by its request id, so even a create whose
// answer was lost on one writer is safe to repeat on the next.
func (w *writers) AdminGroup(ctx context.Context, in *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	return firstAnswer(ctx, w, func(c internalv1.GroupAdminClient) (*internalv1.AdminGroupOutcome, error) {
		return c.AdminGroup(ctx, in)
	})
}

// AdminSend is AdminGroup's search for a system message: a send is idempotent by its
// client_message_id, so repeating it on the next writer is safe.
func (w *writers) AdminSend(ctx context.Context, in *internalv1.AdminSendRequest) (*internalv1.SendOutcome, error) {
	return firstAnswer(ctx, w, func(c internalv1.GroupAdminClient) (*internalv1.SendOutcome, error) { return c.AdminSend(ctx, in) })
}

// outcome is an answer that may say UNAVAILABLE (this writer cannot commit now: try the next).
type outcome interface {
	GetErrorCode() uint32
	GetErrorMessage() string
}

func firstAnswer[T outcome](ctx context.Context, w *writers, call func(internalv1.GroupAdminClient) (T, error)) (T, error) {
	var errs []error
	var zero T
	for i, c := range w.clients {
		out, err := call(c)
		if err == nil {
			if contract.ErrorCode(out.GetErrorCode()) == contract.ErrCodeUnavailable && i+1 < len(w.clients) {
				errs = append(errs, fmt.Errorf("%s: %s", w.cc[i].Target(), out.GetErrorMessage()))
				continue
			}
			return out, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", w.cc[i].Target(), err))
		if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded || ctx.Err() != nil {
			break
		}
	}
	return zero, errors.Join(errs...)
}
