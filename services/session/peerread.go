package session

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// withPeerReads sets peer_read_conversation_seq on the direct entries: the peer's own read
// watermark of the conversation (read receipts), read fresh from the peer's read hash in the core
// Redis on every page — never from the snapshot, whose dirty markers follow this user's records,
// not the peer's MARK_READs. One pipeline of one HMGET per direct entry.
//
// Rejected: projecting the peer's watermark into this user's rows (a MARK_READ would then write
// to the peer's state too, a second write on a path the seed keeps to one).
func (s *Service) withPeerReads(ctx context.Context, tenant contract.TenantID, entries []*qimv1.SessionEntry) error {
	var direct []*qimv1.SessionEntry
	for _, e := range entries {
		if e != nil && e.GetPeerUserId() != 0 {
			direct = append(direct, e)
		}
	}
	if len(direct) == 0 {
		return nil
	}
	cmds := make([]*redis.SliceCmd, len(direct))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range direct {
			conv, _ := contract.ParseConversationID(e.GetConversationId())
			peer := userKey{tenant: tenant, user: contract.UserID(e.GetPeerUserId())}
			cmds[i] = p.HMGet(ctx, readKey(peer), member(conv)) // HMGET: see readSeqs
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("session: peers' read watermarks: %w", err)
	}
	for i, e := range direct {
		vals := cmds[i].Val()
		if len(vals) != 1 {
			continue
		}
		n, err := watermark(vals[0], "peer read watermark")
		if err != nil {
			return err
		}
		e.PeerReadConversationSeq = n
	}
	return nil
}
