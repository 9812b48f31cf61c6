package dispatch

import (
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// groupEnvelope freezes recips (sorted) as a group audience routed with shards.
func groupEnvelope(recips []uint64, shards contract.ShardCount, body []byte) *internalv1.CommittedEnvelope {
	env := envelopeFor(recips[0], recips[0]+1, body)
	var ts []uint32
	for _, u := range recips {
		ts = append(ts, shards.UserShard(contract.TenantID{}, contract.UserID(u)))
	}
	slices.Sort(ts)
	env.Audience = &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Group{Group: &internalv1.GroupAudience{
		MembershipVersion: 3, MemberCount: uint32(len(recips)), TargetShards: slices.Compact(ts), RecipientUserIds: recips}}}
	env.Record.MembershipVersion, env.Record.DirectPeerUserId = 3, 0
	return env
}

func TestPlanGroupOneDispatchPerShardCoveringEveryRecipient(t *testing.T) {
	shards, _ := contract.NewShardCount(8)
	recips := make([]uint64, 100)
	for i := range recips {
		recips[i] = uint64(1000 + i)
	}
	ds, err := Plan(groupEnvelope(recips, shards, []byte("x")), shards, 5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	for i, d := range ds {
		if i > 0 && ds[i-1].GetShard() >= d.GetShard() {
			t.Fatal("two dispatches for one shard, or not ordered by shard")
		}
		if d.GetMembershipVersion() != 3 || d.Body == nil { // 100 × 1 B ≤ 8 KiB: inlined
			t.Fatalf("membership_version %d, body inlined %v; want 3, true", d.GetMembershipVersion(), d.Body != nil)
		}
		for _, r := range d.GetRecipients() {
			if shards.UserShard(contract.TenantID{}, contract.UserID(r)) != d.GetShard() {
				t.Fatalf("recipient %d on shard %d", r, d.GetShard())
			}
			seen[r]++
		}
	}
	if len(seen) != len(recips) {
		t.Fatalf("%d recipients planned, want %d", len(seen), len(recips))
	}
	for r, n := range seen {
		if n != 1 {
			t.Fatalf("recipient %d planned %d times", r, n)
		}
	}
	big, _ := Plan(groupEnvelope(recips, shards, make([]byte, contract.InlineBodyBudgetBytes/100+1)), shards, 0)
	if big[0].Body != nil {
		t.Fatal("inline rule uses the whole audience: 100 × 83 B > 8 KiB must not inline")
	}
}

func TestPlanGroupRefusesAnAudienceRoutedWithOtherShards(t *testing.T) {
	eight, _ := contract.NewShardCount(8)
	sixtyFour, _ := contract.NewShardCount(64)
	env := groupEnvelope([]uint64{11, 12, 13, 14, 15}, eight, nil)
	if _, err := Plan(env, sixtyFour, 0); !errors.Is(err, ErrUnplannable) {
		t.Fatalf("audience frozen with 8 shards planned with 64: %v", err)
	}
	env = groupEnvelope([]uint64{11, 12}, eight, nil)
	env.Audience.GetGroup().MemberCount = 3
	if _, err := Plan(env, eight, 0); !errors.Is(err, ErrUnplannable) {
		t.Fatalf("member_count disagreeing with the recipients planned: %v", err)
	}
}
