package session

import (
	"context"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Badge answers a user's unread total for the badge of an offline push: the sum of the exact
// unread counts of the user's contract.BadgeMaxConversations most recently active conversations,
// computed on read like every session page (invariant 10) — the seed's UserBadgeState, kept as
// a read rather than a stored aggregate that every message would have to update. It is a lower
// bound (saturated) when the user has more conversations or a row counted only up to its window.
func (g grpcServer) Badge(ctx context.Context, in *internalv1.BadgeQuery) (*internalv1.BadgeAnswer, error) {
	start := time.Now()
	out, err := g.s.badge(ctx, in)
	if code, msg := g.s.outcome("badge", start, err); code != contract.ErrCodeUnspecified {
		return &internalv1.BadgeAnswer{ErrorCode: uint32(code), ErrorMessage: msg}, nil
	}
	return out, nil
}

func (s *Service) badge(ctx context.Context, in *internalv1.BadgeQuery) (*internalv1.BadgeAnswer, error) {
	k, err := s.ownedIdentity(in.GetTenantId(), in.GetUserId())
	if err != nil {
		return nil, err
	}
	rows, sums, more, err := s.cache.page(ctx, k, nil, contract.BadgeMaxConversations)
	if err != nil {
		return nil, err
	}
	out := &internalv1.BadgeAnswer{Saturated: more}
	for i := range rows {
		if sums[i].hidden {
			continue
		}
		out.Unread += sums[i].unread
		out.Saturated = out.Saturated || !sums[i].exact
	}
	return out, nil
}
