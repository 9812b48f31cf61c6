package session

// Read-receipt privacy (SET_READ_RECEIPTS). A user may withhold its read receipts; the seed
// requires it to be symmetric — whoever hides its own reads sees nobody's — so every path that
// shows a read to someone else asks both sides: the direct rows' peer watermark, the peer's
// READ_RECEIPT after a MARK_READ, and PULL_READ_RECEIPTS. The setting is one field of a per-user
// hash in the core Redis (absent: sharing, the default), read in the same pipeline as the
// watermarks it guards, so it costs no round trip.
//
// Rejected: a field of the user's read hash (its fields are conversation ids, which the
// redis-artifacts gate checks as such), and keeping the setting in the gateway (every gateway
// would need every user's).

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

const (
	prefsPrefix  = "qim:prefs:"
	prefReceipts = "receipts" // "off": the user withholds its read receipts
)

func prefsKey(k userKey) string {
	return string(appendUserKey(make([]byte, 0, maxKeyLen), prefsPrefix, k))
}

// withholdsCmd queues the read of k's receipts setting on p.
func withholdsCmd(ctx context.Context, p redis.Pipeliner, k userKey) *redis.SliceCmd {
	return p.HMGet(ctx, prefsKey(k), prefReceipts)
}

// withholds reads a queued withholdsCmd: true when the user has turned its receipts off.
func withholds(c *redis.SliceCmd) bool {
	v := c.Val()
	return len(v) == 1 && v[0] == "off"
}

// setReadReceipts serves SET_READ_RECEIPTS.
func (s *Service) setReadReceipts(ctx context.Context, in *internalv1.AuthenticatedSetReadReceipts) (*qimv1.ReadReceiptsSet, error) {
	k, err := s.ownedIdentity(in.GetTenantId(), in.GetUserId())
	if err != nil {
		return nil, err
	}
	var req qimv1.SetReadReceipts
	if err := proto.Unmarshal(in.GetSetReadReceipts(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed SetReadReceipts: %v", err)
	}
	if req.GetShare() {
		err = s.rdb.HDel(ctx, prefsKey(k), prefReceipts).Err()
	} else {
		err = s.rdb.HSet(ctx, prefsKey(k), prefReceipts, "off").Err()
	}
	if err != nil {
		return nil, fmt.Errorf("session: store the read-receipts setting: %w", err)
	}
	return &qimv1.ReadReceiptsSet{Share: req.GetShare()}, nil
}
