package session

import (
	"context"
	"encoding/binary"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// tokenLen is the page token: the last row of the previous page, activity score (8 bytes,
// big-endian) then conversation id (16 bytes). Rows are totally ordered by (score, id), so the
// token names one position whatever moved since; a conversation that moved above the position
// meanwhile is seen on the next first page. Opaque to clients (the proto says so).
const tokenLen = 8 + 16

// identityOf validates the identity the gateway proved at AUTH.
func identityOf(tenant []byte, user uint64) (userKey, error) {
	t, err := contract.U128FromBytes(tenant)
	if err != nil {
		return userKey{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	if user == 0 {
		return userKey{}, rpc.Refuse(contract.ErrCodeUnauthorized, "no authenticated user")
	}
	return userKey{tenant: t, user: contract.UserID(user)}, nil
}

func parseToken(b []byte) (*row, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) != tokenLen {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "page_token of %d bytes is not one this server issued", len(b))
	}
	c, err := contract.ParseConversationID(b[8:])
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "page_token: %v", err)
	}
	return &row{score: binary.BigEndian.Uint64(b[:8]), conv: c}, nil
}

func appendToken(dst []byte, r row) []byte {
	dst = binary.BigEndian.AppendUint64(dst, r.score)
	return contract.U128(r.conv).AppendBytes(dst)
}

// pullSessionList serves one page: rows from the user's snapshot (refreshed from its dirty
// markers on a first page), each with its content computed from canonical history. Any failure
// fails the whole page. A group row of a user who was never a member is left out (and counted
// when its content was computed); the page token still names the page's last snapshot row, so
// paging neither repeats nor skips around it.
func (s *Service) pullSessionList(ctx context.Context, in *internalv1.AuthenticatedPullSessionList) (*qimv1.SessionListBatch, error) {
	k, err := s.ownedIdentity(in.GetTenantId(), in.GetUserId())
	if err != nil {
		return nil, err
	}
	var req qimv1.PullSessionList
	if err := proto.Unmarshal(in.GetPullSessionList(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed PullSessionList: %v", err)
	}
	after, err := parseToken(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = s.cfg.PageSize
	}
	limit = min(limit, maxPageSize)
	rows, sums, more, err := s.cache.page(ctx, k, after, limit)
	if err != nil {
		return nil, err
	}
	out := &qimv1.SessionListBatch{Sessions: make([]*qimv1.SessionEntry, 0, len(rows)), HasMore: more}
	for i, r := range rows {
		if !sums[i].hidden {
			out.Sessions = append(out.Sessions, entryOf(r, sums[i]))
		}
	}
	if more {
		out.NextPageToken = appendToken(make([]byte, 0, tokenLen), rows[len(rows)-1])
	}
	if _, err := s.withPeerReads(ctx, k, out.Sessions); err != nil {
		return nil, err
	}
	return out, nil
}

// activityID is the row's last_activity_id: the HLC id truncated to its millisecond (logical,
// region and writer zero), because the list's sort key keeps the 48-bit time_ms exactly and
// nothing below it. Rows with equal activity are ordered by conversation id.
func activityID(score uint64) []byte {
	id, err := contract.NewMessageID(score, 0, 0, 0)
	if err != nil { // parseRow only admits scores in [1, 2^48)
		return nil
	}
	b := id.Bytes()
	return b[:]
}

func entryOf(r row, s *summary) *qimv1.SessionEntry {
	cid := r.conv.Bytes()
	e := &qimv1.SessionEntry{ConversationId: cid[:], LastActivityId: activityID(r.score), Head: s.head,
		LatestConversationSeq: s.latestSeq, ReadConversationSeq: s.read, UnreadCount: s.unread, UnreadExact: s.exact,
		ConversationKind: uint32(r.conv.Kind())}
	switch {
	case r.conv.Kind() == contract.KindGroup:
		e.Peer = &qimv1.SessionEntry_GroupId{GroupId: cid[:]}
	case s.peer != 0:
		e.Peer = &qimv1.SessionEntry_PeerUserId{PeerUserId: uint64(s.peer)}
	}
	return e
}
