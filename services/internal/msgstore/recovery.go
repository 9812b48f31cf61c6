package msgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// PendingCommits lists up to limit unfinished commits (RESERVED or RECORDED) reserved strictly
// before reservedBeforeMs, oldest first, for the writer's recovery loop. The recovery index
// (qim:cmtpending) gains an entry at reserve and loses it in MarkCommitted's script, so it is
// bounded by the commits in flight or abandoned. Each member is a commit key name; the key is
// parsed back and the conversation read from the hash (it is not part of the key name).
//
// An entry whose hash is gone or whose key does not round-trip is reported as ErrCorrupt rather
// than skipped: a silently skipped entry is an unacknowledged commit nobody will ever finish.
func (s *Store) PendingCommits(ctx context.Context, reservedBeforeMs int64, limit int) ([]CommitKey, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("msgstore: pending commits: %w: limit %d", ErrInvalidArgument, limit)
	}
	members, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: pendingKey, Start: "-inf", Stop: "(" + strconv.FormatInt(reservedBeforeMs, 10),
		ByScore: true, Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("msgstore: pending commits: %w", err)
	}
	if len(members) == 0 {
		return nil, nil
	}
	cids := make([]*redis.StringCmd, len(members))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range members {
			cids[i] = p.HGet(ctx, m, "cid")
		}
		return nil
	}); err != nil && !isReply(err) {
		return nil, fmt.Errorf("msgstore: pending commits: %w", err)
	}
	out := make([]CommitKey, 0, len(members))
	for i, m := range members {
		k, err := pendingEntry(m, cids[i])
		if err != nil {
			return nil, fmt.Errorf("msgstore: pending commits: %w", err)
		}
		out = append(out, k)
	}
	return out, nil
}

// pendingEntry rebuilds the CommitKey of one recovery index member.
func pendingEntry(member string, cidCmd *redis.StringCmd) (CommitKey, error) {
	p, err := parseCommitKey(member)
	if err != nil {
		return CommitKey{}, &CorruptError{Reason: "recovery index member: " + err.Error()}
	}
	cidRaw, err := cidCmd.Result()
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return CommitKey{}, &CorruptError{Tenant: p.tenant, Reason: "recovery index entry without its commit hash"}
		}
		return CommitKey{}, err
	}
	cid, err := contract.U128FromBytes([]byte(cidRaw))
	if err != nil {
		return CommitKey{}, &CorruptError{Tenant: p.tenant, Reason: "commit hash conversation_id"}
	}
	k := CommitKey{Tenant: p.tenant, Sender: p.sender, ClientMessageID: p.cmid,
		Conversation: contract.ConversationID(cid)}
	if commitKey(k) != member {
		return CommitKey{}, &CorruptError{Tenant: p.tenant, Conversation: k.Conversation,
			Reason: "recovery index member is not the canonical commit key of its conversation"}
	}
	return k, nil
}
