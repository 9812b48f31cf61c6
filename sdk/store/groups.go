package store

// Durable CREATE_GROUP requests (group_creates).
//
// A group is created the way a message is sent: CreateGroup records the request here first, with
// a client_request_id derived from a freshly claimed ordinal, and the SDK's connection goroutine
// sends it once reconciled, again after every reconnect or restart, until GROUP_CREATED (the row
// goes) or a definite refusal (the row stays, failed). The server derives the group id from
// (tenant, creator, client_request_id) (contract.DeriveGroupID), so every retry names the group
// the first attempt created, and the id is known here before the server has seen the request:
// the app can list the conversation and queue messages to it at once.
//
// The request id comes from the same ordinal range as client_message_ids (ordinal.go), so it is
// never handed out twice, not even as a message's id. Rejected: a random id per request — it
// would have to be stored before use anyway (a retry must reuse it), and a counter makes "never
// twice" checkable.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/qim-dev/qim/contract"
)

// GroupCreate is one CREATE_GROUP the server has not confirmed.
type GroupCreate struct {
	ClientRequestID contract.U128
	Ordinal         uint64
	// Group is contract.DeriveGroupID(tenant, user, ClientRequestID): the group id and its
	// conversation id.
	Group       contract.ConversationID
	Name        string
	Members     []contract.UserID // initial members besides the creator, ascending
	CreatedAtMs int64
	State       PendingState
	ErrorCode   contract.ErrorCode
	ErrorText   string
}

// NewGroupCreate is what CreateGroup records.
type NewGroupCreate struct {
	Name    string
	Members []contract.UserID // duplicates and the creator's own id are dropped
	NowMs   int64
}

// AddGroupCreate records a CREATE_GROUP as queued and creates the group's conversation row, so
// the group is listed at once, in one transaction with the ordinal claim.
func (s *Store) AddGroupCreate(ctx context.Context, ng NewGroupCreate) (GroupCreate, error) {
	members := NormalizeMembers(ng.Members, s.id.User)
	if slices.Contains(members, 0) {
		return GroupCreate{}, fmt.Errorf("%w: member user must not be zero", ErrInvalid)
	}
	s.ord.mu.Lock()
	defer s.ord.mu.Unlock()
	var g GroupCreate
	var end uint64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ord, rangeEnd, err := s.claimOrdinal(ctx, tx)
		if err != nil {
			return err
		}
		end = rangeEnd
		crid := contract.U128(s.ClientMessageID(ord))
		g = GroupCreate{ClientRequestID: crid, Ordinal: ord, Group: contract.DeriveGroupID(s.id.Tenant, s.id.User, crid),
			Name: ng.Name, Members: members, CreatedAtMs: ng.NowMs}
		if _, err := tx.ExecContext(ctx, `INSERT INTO group_creates VALUES (?, ?, ?, ?, ?, ?, 0, 0, '')`,
			u128b(crid), i64(ord), u128b(contract.U128(g.Group)), g.Name, encodeUsers(members), g.CreatedAtMs); err != nil {
			return fmt.Errorf("store: insert group create: %w", err)
		}
		return touchForSend(ctx, tx, g.Group, 0, ng.NowMs)
	})
	if err != nil {
		return GroupCreate{}, err
	}
	s.ord.next, s.ord.end = g.Ordinal+1, end
	return g, nil
}

// NormalizeMembers sorts the users, drops duplicates and self: the set CreateGroup sends (the
// creator is always a member and need not be listed).
func NormalizeMembers(users []contract.UserID, self contract.UserID) []contract.UserID {
	out := slices.Clone(users)
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(u contract.UserID) bool { return u == self })
}

const groupCreateCols = `client_request_id, ordinal, group_id, name, members, created_at_ms, state, error_code,
	error_text`

func scanGroupCreate(sc interface{ Scan(...any) error }) (GroupCreate, error) {
	var g GroupCreate
	var crid, group, members []byte
	var ord, state, code int64
	if err := sc.Scan(&crid, &ord, &group, &g.Name, &members, &g.CreatedAtMs, &state, &code, &g.ErrorText); err != nil {
		return GroupCreate{}, err
	}
	c, err := contract.U128FromBytes(crid)
	if err != nil {
		return GroupCreate{}, fmt.Errorf("%w: group create client_request_id", ErrSchema)
	}
	gid, err := contract.U128FromBytes(group)
	if err != nil {
		return GroupCreate{}, fmt.Errorf("%w: group create group_id", ErrSchema)
	}
	g.ClientRequestID, g.Group, g.Ordinal = c, contract.ConversationID(gid), uint64(ord)
	g.Members, g.State, g.ErrorCode = decodeUsers(members), PendingState(state), contract.ErrorCode(uint32(code))
	return g, nil
}

// GroupCreates lists every unconfirmed CREATE_GROUP, queued and failed, in the order made.
func (s *Store) GroupCreates(ctx context.Context) ([]GroupCreate, error) {
	return s.queryGroupCreates(ctx, `SELECT `+groupCreateCols+` FROM group_creates ORDER BY ordinal`)
}

// QueuedGroupCreates lists up to limit queued CREATE_GROUPs, oldest first.
func (s *Store) QueuedGroupCreates(ctx context.Context, limit int) ([]GroupCreate, error) {
	return s.queryGroupCreates(ctx, `SELECT `+groupCreateCols+` FROM group_creates WHERE state = 0
		ORDER BY ordinal LIMIT ?`, limit)
}

func (s *Store) queryGroupCreates(ctx context.Context, q string, args ...any) ([]GroupCreate, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list group creates: %w", err)
	}
	defer rows.Close()
	var out []GroupCreate
	for rows.Next() {
		g, err := scanGroupCreate(rows)
		if err != nil {
			return nil, fmt.Errorf("store: scan group create: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list group creates: %w", err)
	}
	return out, nil
}

// ResolveGroupCreate records GROUP_CREATED: the request is done and its row goes. It reports
// false when nothing was queued under that id (a duplicate answer).
func (s *Store) ResolveGroupCreate(ctx context.Context, crid contract.U128) (bool, error) {
	return s.execOne(ctx, "resolve group create", `DELETE FROM group_creates WHERE client_request_id = ?`, u128b(crid))
}

// FailGroupCreate marks a queued CREATE_GROUP failed for good (a definite refusal, or too old),
// so it is never sent again. It reports false when it was not queued.
func (s *Store) FailGroupCreate(ctx context.Context, crid contract.U128, code contract.ErrorCode, text string) (bool, error) {
	return s.execOne(ctx, "fail group create", `UPDATE group_creates SET state = 1, error_code = ?, error_text = ?
		WHERE client_request_id = ? AND state = 0`, int64(code), text, u128b(crid))
}

// execOne runs one write in its own transaction and reports whether it changed a row.
func (s *Store) execOne(ctx context.Context, what, q string, args ...any) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("store: %s: %w", what, err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}
