package notify

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/pushtoken"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// badgeTimeout bounds one Badge call: a badge is a nicety, the notification goes without one.
const badgeTimeout = 2 * time.Second

// badges asks each user's SessionProjection for the user's unread total (Session.Badge),
// routed as the gateways route: entry i of n serves the i-th of n shard ranges.
//
// A failed or refused answer gives no badge (-1, counted): the notification is sent without it
// rather than held, since the device pulls the exact counts when it connects. The total may miss
// a conversation the SessionProjection has not listed yet (its first message, read from
// qim.dispatch concurrently with this service).
type badges struct {
	nodes  []internalv1.SessionClient
	shards contract.ShardCount
	m      *metrics
}

// sessionConnectTimeout bounds one dial of a SessionProjection.
const sessionConnectTimeout = 5 * time.Second

func dialBadges(addrs []string, creds grpc.DialOption, shards contract.ShardCount, m *metrics) (*badges, []*grpc.ClientConn, error) {
	b := &badges{shards: shards, m: m}
	var conns []*grpc.ClientConn
	for _, a := range addrs {
		cc, err := grpc.NewClient(a, creds, rpc.Reconnect(sessionConnectTimeout))
		if err != nil {
			return nil, conns, fmt.Errorf("notify: dial session %s: %w", a, err)
		}
		conns = append(conns, cc)
		b.nodes = append(b.nodes, internalv1.NewSessionClient(cc))
	}
	return b, conns, nil
}

// of returns the badge of each user, at most limit calls in flight. A nil badges gives none.
func (b *badges) of(ctx context.Context, users []pushtoken.User, limit int) map[pushtoken.User]int {
	out := make(map[pushtoken.User]int, len(users))
	if b == nil {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for _, u := range users {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			n := b.one(ctx, u)
			mu.Lock()
			out[u] = n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (b *badges) one(ctx context.Context, u pushtoken.User) int {
	ctx, cancel := context.WithTimeout(ctx, badgeTimeout)
	defer cancel()
	i := 0
	if n := len(b.nodes); n > 1 {
		i = b.shards.ShardInstance(b.shards.UserShard(u.Tenant, u.User), n)
	}
	tb := u.Tenant.Bytes()
	ans, err := b.nodes[i].Badge(ctx, &internalv1.BadgeQuery{TenantId: tb[:], UserId: uint64(u.User)})
	if err != nil || ans.GetErrorCode() != 0 {
		b.m.badges.WithLabelValues("failed").Inc()
		return -1
	}
	b.m.badges.WithLabelValues(map[bool]string{true: "saturated", false: "exact"}[ans.GetSaturated()]).Inc()
	return int(ans.GetUnread())
}
