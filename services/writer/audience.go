package writer

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// Bounds of the audience cache: a group has at most contract.GroupMaxMembers members, so the
// cache holds at most audienceCacheMembers user ids (16 MB) whatever the mix of group sizes.
const (
	audienceCacheEntries = 4096
	audienceCacheMembers = 2_000_000
)

// audienceKey names an immutable audience: the members of a group at one membership version.
type audienceKey struct {
	tenant  contract.TenantID
	conv    contract.ConversationID
	version uint64
}

// audiences freezes the audience of group records for their Outbox envelopes.
//
// Invariants: the recipients of a message at seq S are the users whose interval holds S
// (msgstore.GroupState.MembersAt); intervals only ever open or close at seqs allocated after
// them, so that set never changes once S is committed, and it is the same for every S committed
// under one membership version — which is why a cache keyed by (tenant, group, version) can
// never serve a stale audience, and needs no invalidation. A membership CONTROL message is not
// cached: its audience includes the users it changes (a leaver sees its own leave) and, above
// contract.MembershipEventBroadcastMaxMembers, is only them.
//
// Rejected: freezing the audience by reference (version only) and letting the fanout read the
// members. The fanout and the orphan audit would then need Redis and a snapshot per version;
// with at most 1,000 members the ids fit in the Outbox record (docs/adr/0020).
type audiences struct {
	store  groupStore
	shards contract.ShardCount

	mu      sync.Mutex
	cache   map[audienceKey][]uint64
	order   []audienceKey // FIFO eviction
	members int
}

func newAudiences(store groupStore, shards contract.ShardCount) *audiences {
	return &audiences{store: store, shards: shards, cache: make(map[audienceKey][]uint64)}
}

// groupEnvelope builds the Outbox envelope of a group record (rec is the stored record).
func (a *audiences) groupEnvelope(ctx context.Context, record []byte, reservedAtMs int64) ([]byte, error) {
	var r internalv1.MessageRecord
	if err := proto.Unmarshal(record, &r); err != nil {
		return nil, fmt.Errorf("writer: decode stored group record: %w", err)
	}
	tenant, err := contract.U128FromBytes(r.GetTenantId())
	if err != nil {
		return nil, fmt.Errorf("writer: stored group record tenant: %w", err)
	}
	conv, err := contract.ParseConversationID(r.GetConversationId())
	if err != nil || conv.Kind() != contract.KindGroup || r.GetMembershipVersion() == 0 {
		return nil, fmt.Errorf("writer: stored group record lacks its conversation or membership_version")
	}
	var recips []uint64
	if contract.MessageType(r.GetMessageType()) == contract.MessageControl && r.GetCustomType() == contract.MembershipCustomType {
		recips, err = a.controlRecipients(ctx, tenant, conv, &r)
	} else {
		recips, err = a.recipients(ctx, audienceKey{tenant, conv, r.GetMembershipVersion()}, r.GetConversationSeq())
	}
	if err != nil {
		return nil, err
	}
	return a.encode(tenant, conv, r.GetMembershipVersion(), recips, record, reservedAtMs)
}

// recipients returns the audience of a message at seq committed under key.version.
func (a *audiences) recipients(ctx context.Context, key audienceKey, seq uint64) ([]uint64, error) {
	a.mu.Lock()
	hit, ok := a.cache[key]
	a.mu.Unlock()
	if ok {
		return hit, nil
	}
	g, err := a.load(ctx, key.tenant, key.conv)
	if err != nil {
		return nil, err
	}
	out := ids(g.MembersAt(seq))
	if len(out) == 0 {
		return nil, fmt.Errorf("writer: group %s has no member at seq %d: %w", key.conv, seq, msgstore.ErrCorrupt)
	}
	a.put(key, out)
	return out, nil
}

// controlRecipients is the audience of a membership change: everyone whose interval holds its
// seq (the changed users included) while the group stays small, only the changed users above
// the broadcast threshold (they learn of it; the others see it in PULL_MEMBERS).
func (a *audiences) controlRecipients(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, r *internalv1.MessageRecord) ([]uint64, error) {
	var ch qimv1.MembershipChange
	if err := proto.Unmarshal(r.GetBody(), &ch); err != nil || len(ch.GetUserIds()) == 0 {
		return nil, fmt.Errorf("writer: membership record body: %v: %w", err, msgstore.ErrCorrupt)
	}
	if ch.GetMemberCount() > contract.MembershipEventBroadcastMaxMembers {
		out := slices.Clone(ch.GetUserIds())
		slices.Sort(out)
		return slices.Compact(out), nil
	}
	g, err := a.load(ctx, tenant, conv)
	if err != nil {
		return nil, err
	}
	return ids(g.MembersAt(r.GetConversationSeq())), nil
}

func (a *audiences) load(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID) (*msgstore.GroupState, error) {
	g, ok, err := a.store.LoadGroup(ctx, tenant, conv)
	if err != nil {
		return nil, fmt.Errorf("writer: load group audience: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("writer: committed group record of group %s without membership: %w", conv, msgstore.ErrCorrupt)
	}
	return g, nil
}

func (a *audiences) put(key audienceKey, recips []uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.cache[key]; ok {
		return
	}
	for len(a.order) > 0 && (len(a.order) >= audienceCacheEntries || a.members+len(recips) > audienceCacheMembers) {
		old := a.order[0]
		a.order = a.order[1:]
		a.members -= len(a.cache[old])
		delete(a.cache, old)
	}
	a.cache[key], a.order, a.members = recips, append(a.order, key), a.members+len(recips)
}

// encode assembles the envelope with a GroupAudience carrying the recipients by value.
func (a *audiences) encode(tenant contract.TenantID, conv contract.ConversationID, version uint64, recips []uint64,
	record []byte, reservedAtMs int64) ([]byte, error) {
	shards := make([]uint32, 0, len(recips))
	for _, u := range recips {
		shards = append(shards, a.shards.UserShard(tenant, contract.UserID(u)))
	}
	slices.Sort(shards)
	gid := conv.Bytes()
	aud, err := proto.MarshalOptions{Deterministic: true}.Marshal(&internalv1.FrozenAudience{
		Audience: &internalv1.FrozenAudience_Group{Group: &internalv1.GroupAudience{
			GroupId: gid[:], MembershipVersion: version, MemberCount: uint32(len(recips)),
			TargetShards: slices.Compact(shards), RecipientUserIds: recips,
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("writer: encode group audience: %w", err)
	}
	return assemble(record, aud, reservedAtMs), nil
}

func ids(us []contract.UserID) []uint64 {
	out := make([]uint64, len(us))
	for i, u := range us {
		out[i] = uint64(u)
	}
	return out
}
