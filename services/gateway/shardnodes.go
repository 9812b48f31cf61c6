package gateway

import (
	"context"
	"errors"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Users are placed on MailboxNode and SessionProjection instances by their mailbox shard, in
// the static ranges of contract.ShardCount.InstanceShards (ADR-0026): entry i of
// QIM_MAILBOX_ADDRS serves the i-th range, and so does entry i of QIM_SESSION_ADDRS. Routing
// is exact, not affinity: only the owner of a shard has its caught-up state (the MailboxNode its
// watermark, the SessionProjection its snapshots), and a node refuses a user it does not own
// with UNAVAILABLE, so a list that disagrees with the nodes' owned shards fails loudly instead of
// answering from the wrong place.

// mailboxNode is one MailboxNode: its channel and its pull batcher (pulls are batched per node,
// since one batch is one call to one node).
type mailboxNode struct {
	addr   string
	cc     *grpc.ClientConn
	client internalv1.MailboxClient
	pulls  *pullBatcher
}

// sessionNode is one SessionProjection instance.
type sessionNode struct {
	addr   string
	cc     *grpc.ClientConn
	client internalv1.SessionClient
}

// shardRoute maps a user to the index of the instance serving the user's shard.
type shardRoute struct {
	shards    contract.ShardCount
	instances int
}

func (r shardRoute) of(tenant contract.TenantID, user contract.UserID) int {
	if r.instances == 1 {
		return 0
	}
	return r.shards.ShardInstance(r.shards.UserShard(tenant, user), r.instances)
}

func (s *Service) mailboxFor(tenant contract.TenantID, user contract.UserID) *mailboxNode {
	return s.mailboxes[shardRoute{s.shards, len(s.mailboxes)}.of(tenant, user)]
}

func (s *Service) sessionFor(tenant contract.TenantID, user contract.UserID) *sessionNode {
	return s.sessions[shardRoute{s.shards, len(s.sessions)}.of(tenant, user)]
}

// channels dials each distinct address once: an address listed twice (a node that took over
// another's range) shares one channel.
type channels struct {
	dial func(service, addr string) (*grpc.ClientConn, error)
	byAd map[string]*grpc.ClientConn
	all  []*grpc.ClientConn
}

func (c *channels) get(service, addr string) (*grpc.ClientConn, error) {
	key := service + "\x00" + addr
	if cc, ok := c.byAd[key]; ok {
		return cc, nil
	}
	cc, err := c.dial(service, addr)
	if err != nil {
		return nil, err
	}
	c.byAd[key] = cc
	c.all = append(c.all, cc)
	return cc, nil
}

// allReady reports nil once every listed channel is READY: each MailboxNode and each
// SessionProjection serves users no other instance serves.
func allReady(ctx context.Context, name string, ccs []*grpc.ClientConn, addrs []string) error {
	var errs []error
	for i, cc := range ccs {
		if err := waitBackendReady(ctx, name+" "+addrs[i], cc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
