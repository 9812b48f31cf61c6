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
// not the peer's MARK_READs. One pipeline: one HMGET per direct entry for the watermark and one
// for the peer's receipts setting, and one for the reader's (prefs.go): a watermark is shown only
// when both share. It reports, per entry, whether both share (false for a group entry).
//
// Rejected: projecting the peer's watermark into this user's rows (a MARK_READ would then write
// to the peer's state too, a second write on a path the seed keeps to one).
func (s *Service) withPeerReads(ctx context.Context, k userKey, entries []*qimv1.SessionEntry) ([]bool, error) {
	shared := make([]bool, len(entries))
	var at []int
	for i, e := range entries {
		if e != nil && e.GetPeerUserId() != 0 {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return shared, nil
	}
	marks, peerOff := make([]*redis.SliceCmd, len(at)), make([]*redis.SliceCmd, len(at))
	var selfOff *redis.SliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		selfOff = withholdsCmd(ctx, p, k)
		for j, i := range at {
			conv, _ := contract.ParseConversationID(entries[i].GetConversationId())
			peer := userKey{tenant: k.tenant, user: contract.UserID(entries[i].GetPeerUserId())}
			marks[j] = p.HMGet(ctx, readKey(peer), member(conv)) // HMGET: see readSeqs
			peerOff[j] = withholdsCmd(ctx, p, peer)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session: peers' read watermarks: %w", err)
	}
	for j, i := range at {
		e := entries[i]
		e.PeerReadConversationSeq = 0
		if withholds(selfOff) || withholds(peerOff[j]) {
			continue
		}
		shared[i] = true
		vals := marks[j].Val()
		if len(vals) != 1 {
			continue
		}
		n, err := watermark(vals[0], "peer read watermark")
		if err != nil {
			return nil, err
		}
		e.PeerReadConversationSeq = n
	}
	return shared, nil
}
