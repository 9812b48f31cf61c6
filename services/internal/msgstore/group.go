package msgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// GroupState is a group as stored: its meta and every member's intervals, current and former.
type GroupState struct {
	Conversation contract.ConversationID
	Version      uint64 // membership version: 1 after creation, +1 per change
	Count        int    // current members
	Owner        contract.UserID
	Name         string
	CreateIdent  string // identity of the creating request (CONFLICT on a retry with other content)
	Members      map[contract.UserID]contract.Membership
}

// MembersAt lists, ascending, the users whose interval holds seq: the audience of the message at
// seq. Intervals only ever close or open at seqs allocated after them, so the answer for a
// committed seq never changes, whatever happens to the group later.
func (g *GroupState) MembersAt(seq uint64) []contract.UserID {
	out := make([]contract.UserID, 0, g.Count+1)
	for u, m := range g.Members {
		if m.Contains(seq) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// Current lists the current members, ascending.
func (g *GroupState) Current() []contract.UserID {
	out := make([]contract.UserID, 0, g.Count)
	for u, m := range g.Members {
		if m.Current() {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// LoadGroup reads a group (found false: no such group). Two reads in one pipeline; a meta whose
// member count disagrees with the open intervals is reported corrupt rather than served.
func (s *Store) LoadGroup(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID) (*GroupState, bool, error) {
	gk := newGroupKeys(tenant, conv)
	pipe := s.rdb.Pipeline()
	meta := pipe.HMGet(ctx, gk.meta, "v", "n", "owner", "name", "crq")
	mem := pipe.HGetAll(ctx, gk.members)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, fmt.Errorf("msgstore: load group: %w", err)
	}
	v := meta.Val()
	if v[0] == nil {
		return nil, false, nil
	}
	corrupt := func(why string) error {
		return &CorruptError{Tenant: tenant, Conversation: conv, Reason: "group: " + why}
	}
	g := &GroupState{Conversation: conv, Members: make(map[contract.UserID]contract.Membership, len(mem.Val()))}
	var err error
	if g.Version, err = strconv.ParseUint(str(v[0]), 10, 63); err != nil || g.Version == 0 {
		return nil, false, corrupt("version")
	}
	n, err := strconv.Atoi(str(v[1]))
	owner, err2 := strconv.ParseUint(str(v[2]), 10, 64)
	if err != nil || err2 != nil {
		return nil, false, corrupt("count or owner")
	}
	g.Count, g.Owner, g.Name, g.CreateIdent = n, contract.UserID(owner), str(v[3]), str(v[4])
	open := 0
	for f, val := range mem.Val() {
		u, err := strconv.ParseUint(f, 10, 64)
		if err != nil || u == 0 {
			return nil, false, corrupt("member field " + strconv.Quote(f))
		}
		m, err := parseIntervals(val)
		if err != nil {
			return nil, false, corrupt(err.Error())
		}
		if m.Current() {
			open++
		}
		g.Members[contract.UserID(u)] = m
	}
	if open != g.Count {
		return nil, false, corrupt(fmt.Sprintf("meta counts %d members, %d intervals are open", g.Count, open))
	}
	return g, true, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// MemberIntervals returns user's intervals in each group conversation of convs (nil: never a
// member), with one pipelined HGET per conversation. It reads the intervals only, not the meta:
// what a reader may see is decided by them alone.
func (s *Store) MemberIntervals(ctx context.Context, tenant contract.TenantID, user contract.UserID,
	convs []contract.ConversationID) ([]contract.Membership, error) {
	out := make([]contract.Membership, len(convs))
	if len(convs) == 0 {
		return out, nil
	}
	field := strconv.FormatUint(uint64(user), 10)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(convs))
	for i, c := range convs {
		cmds[i] = pipe.HGet(ctx, newGroupKeys(tenant, c).members, field)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("msgstore: member intervals: %w", err)
	}
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("msgstore: member intervals: %w", err)
		}
		if out[i], err = parseIntervals(v); err != nil {
			return nil, &CorruptError{Tenant: tenant, Conversation: convs[i], Reason: "group member: " + err.Error()}
		}
	}
	return out, nil
}
