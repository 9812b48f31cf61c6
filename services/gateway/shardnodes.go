package gateway

import (
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

// shardInstance is the index of the instance serving the user's shard, of n.
func (s *Service) shardInstance(tenant contract.TenantID, user contract.UserID, n int) int {
	if n == 1 {
		return 0
	}
	return s.shards.ShardInstance(s.shards.UserShard(tenant, user), n)
}

func (s *Service) mailboxFor(tenant contract.TenantID, user contract.UserID) *mailboxNode {
	return s.mailboxes[s.shardInstance(tenant, user, len(s.mailboxes))]
}

func (s *Service) sessionFor(tenant contract.TenantID, user contract.UserID) *sessionNode {
	return s.sessions[s.shardInstance(tenant, user, len(s.sessions))]
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
