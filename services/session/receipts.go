package session

// Group read receipts (PULL_READ_RECEIPTS): who of a group has read how far. A read watermark has
// the prefix property — everything up to it is read — so "who read seq s" is {member | watermark
// >= s}, and the answer costs O(members) reads of state that exists anyway, never a row per
// (message, reader). Pull only: the seed's arithmetic for pushing it (a 1,000-member group read by
// all is 10^6 frames, N² per message) rules the push out for groups, and a client asks when its
// user opens "read by". A group holds at most contract.GroupMaxMembers, so one pipeline of one
// HMGET per member answers the whole group in one round trip after the group's own read.
//
// The audience of seq s is the current members (but the asker) whose membership holds s: a member
// added after the message cannot see it and is no reader missing, so the count stays exact as
// the group changes.
//
// Rejected: storing a reader set per message (O(messages × members), and what a watermark already
// says), and counting former members (they left; "read by 3 of 5" is about who is there now).

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// pullReadReceipts serves PULL_READ_RECEIPTS for a current member of a group.
func (s *Service) pullReadReceipts(ctx context.Context, in *internalv1.AuthenticatedPullReadReceipts) (*qimv1.ReadReceiptsBatch, error) {
	k, err := s.ownedIdentity(in.GetTenantId(), in.GetUserId())
	if err != nil {
		return nil, err
	}
	var req qimv1.PullReadReceipts
	if err := proto.Unmarshal(in.GetPullReadReceipts(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed PullReadReceipts: %v", err)
	}
	conv, err := contract.ParseConversationID(req.GetConversationId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	if conv.Kind() != contract.KindGroup {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument,
			"read receipts are pulled for groups; a direct conversation's session entry carries the peer's watermark")
	}
	seq, err := contract.NewConversationSeq(req.GetConversationSeq())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	g, ok, err := s.src.hist.LoadGroup(ctx, k.tenant, conv)
	if err != nil {
		return nil, fmt.Errorf("session: load group: %w", err)
	}
	if !ok || !g.Members[k.user].Current() {
		return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a current member of this group")
	}
	others := slices.DeleteFunc(g.Current(), func(u contract.UserID) bool { return u == k.user })
	rs, err := s.st.watermarks(ctx, k, conv, others)
	if err != nil {
		return nil, err
	}
	if rs.askerWithholds {
		return nil, rpc.Refuse(contract.ErrCodeForbidden, "your read receipts are off: turn them on (SET_READ_RECEIPTS) to see others'")
	}
	out := &qimv1.ReadReceiptsBatch{ConversationId: req.GetConversationId(), ConversationSeq: uint64(seq),
		Reads: make([]*qimv1.MemberRead, len(others))}
	marks := rs.marks
	for i, u := range others {
		out.Reads[i] = &qimv1.MemberRead{UserId: uint64(u), ReadConversationSeq: marks[i], Withheld: rs.withheld[i]}
		if seq == 0 || rs.withheld[i] || !g.Members[u].Contains(uint64(seq)) {
			continue
		}
		out.AudienceCount++
		if marks[i] >= uint64(seq) {
			out.ReadCount++
		}
	}
	s.m.receiptPulls.Observe(float64(len(others)))
	return out, nil
}

// memberReads is what watermarks read: each user's watermark (0 where none or withheld), whether
// it withholds its receipts, and whether the asker does.
type memberReads struct {
	marks          []uint64
	withheld       []bool
	askerWithholds bool
}

// watermarks reads conv's read watermark and receipts setting of each user, and the asker's
// setting: two HMGETs per user (HMGET, never HGET: see readSeqs), all in one pipeline.
func (s *store) watermarks(ctx context.Context, asker userKey, conv contract.ConversationID, users []contract.UserID) (memberReads, error) {
	out := memberReads{marks: make([]uint64, len(users)), withheld: make([]bool, len(users))}
	cmds, offs := make([]*redis.SliceCmd, len(users)), make([]*redis.SliceCmd, len(users))
	var self *redis.SliceCmd
	field := member(conv)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		self = withholdsCmd(ctx, p, asker)
		for i, u := range users {
			k := userKey{tenant: asker.tenant, user: u}
			cmds[i], offs[i] = p.HMGet(ctx, readKey(k), field), withholdsCmd(ctx, p, k)
		}
		return nil
	})
	if err != nil {
		return memberReads{}, fmt.Errorf("session: members' read watermarks: %w", err)
	}
	out.askerWithholds = withholds(self)
	for i, c := range cmds {
		vals := c.Val()
		if len(vals) != 1 {
			return memberReads{}, fmt.Errorf("%w: HMGET answered %d values for 1 field", ErrCorruptState, len(vals))
		}
		if out.withheld[i] = withholds(offs[i]); out.withheld[i] {
			continue
		}
		if out.marks[i], err = watermark(vals[0], "read watermark"); err != nil {
			return memberReads{}, err
		}
	}
	return out, nil
}

// watermark parses one HMGET value of a read hash: nil (no field) is 0, anything but a decimal
// uint64 is corrupt state, never served as 0.
func watermark(v any, what string) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	str, _ := v.(string)
	n, err := strconv.ParseUint(str, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q", ErrCorruptState, what, str)
	}
	return n, nil
}
