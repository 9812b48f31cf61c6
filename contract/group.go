package contract

import (
	"encoding/binary"
	"fmt"
	"slices"

	"lukechampine.com/blake3"
)

// MembershipOp is MembershipChange.op (raw uint32 on the wire).
type MembershipOp uint32

const (
	MembershipCreate MembershipOp = 1
	MembershipAdd    MembershipOp = 2
	MembershipRemove MembershipOp = 3
	MembershipLeave  MembershipOp = 4
)

func (o MembershipOp) String() string {
	switch o {
	case MembershipCreate:
		return "CREATE"
	case MembershipAdd:
		return "ADD"
	case MembershipRemove:
		return "REMOVE"
	case MembershipLeave:
		return "LEAVE"
	}
	return fmt.Sprintf("MembershipOp(%d)", uint32(o))
}

// GroupID is a group's id; its conversation is GroupConversationID(GroupID), the same 16 bytes
// with the GROUP kind bits.
type GroupID = U128

// DeriveGroupID = blake3("qim.group-id.v1\0" ‖ tenant_be16 ‖ creator_be8 ‖ client_request_id_be16)
// [0..16] with the GROUP kind in its top 4 bits. Derived rather than allocated, so a CREATE_GROUP
// retry names the group its first attempt created and idempotency needs no second key.
func DeriveGroupID(tenant TenantID, creator UserID, clientRequestID U128) ConversationID {
	var buf [len(DomainGroupID) + 16 + 8 + 16]byte
	n := copy(buf[:], DomainGroupID)
	n += copy(buf[n:], tenant.AppendBytes(nil))
	binary.BigEndian.PutUint64(buf[n:], uint64(creator))
	n += 8
	copy(buf[n:], clientRequestID.AppendBytes(nil))
	sum := blake3.Sum256(buf[:])
	u, _ := U128FromBytes(sum[:16])
	return withKind(u, KindGroup)
}

// MembershipClientMessageID is the client_message_id of a membership CONTROL message:
// blake3("qim.membership-cmid.v1\0" ‖ tenant ‖ group ‖ op_be4 ‖ actor_be8 ‖ version_be8 ‖
// sorted users_be8…)[0..16]. A retry of the same change planned at the same version finds the
// commit of its first attempt instead of changing the group twice.
func MembershipClientMessageID(tenant TenantID, group ConversationID, op MembershipOp, actor UserID,
	version uint64, users []UserID) ClientMessageID {
	us := slices.Clone(users)
	slices.Sort(us)
	h := blake3.New(32, nil)
	b := append([]byte(DomainMembershipCmid), tenant.AppendBytes(nil)...)
	b = U128(group).AppendBytes(b)
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	b = binary.BigEndian.AppendUint64(b, uint64(actor))
	b = binary.BigEndian.AppendUint64(b, version)
	for _, u := range us {
		b = binary.BigEndian.AppendUint64(b, uint64(u))
	}
	_, _ = h.Write(b)
	sum := h.Sum(nil)
	u, _ := U128FromBytes(sum[:16])
	if u.IsZero() {
		u.Lo = 1
	}
	return ClientMessageID(u)
}

// MemberInterval is one stretch of a user's membership of a group conversation: the member sees
// the conversation_seq values s with Joined < s ≤ Left, or every s > Joined while Left is 0 (a
// current member). A join by the CONTROL message at seq J opens (J−1, …], so the member sees its
// own join; a leave or removal at J closes it at Left = J, so the leaver sees its own leave and
// nothing after; the creator and initial members open at Joined = 0 (docs/adr/0020-groups-membership-intervals.md).
type MemberInterval struct {
	Joined uint64
	Left   uint64 // 0: open
}

// Contains reports whether seq is visible in the interval.
func (iv MemberInterval) Contains(seq uint64) bool {
	return seq > iv.Joined && (iv.Left == 0 || seq <= iv.Left)
}

// Membership is a user's intervals in one group, ascending and disjoint (a user who left and was
// added again has several); nil for a user who was never a member.
type Membership []MemberInterval

// Contains reports whether seq is visible to the user.
func (m Membership) Contains(seq uint64) bool {
	for _, iv := range m {
		if iv.Contains(seq) {
			return true
		}
	}
	return false
}

// Current reports whether the user is a member now (its last interval is open).
func (m Membership) Current() bool { return len(m) > 0 && m[len(m)-1].Left == 0 }

// Ever reports whether the user was ever a member (and so may read its own intervals).
func (m Membership) Ever() bool { return len(m) > 0 }

// Bounds is the smallest span covering every interval: reads never look at seq ≤ lo, nor above
// hi when bounded (a former member). Seqs between two intervals are filtered by Contains.
func (m Membership) Bounds() (lo, hi uint64, bounded bool) {
	if len(m) == 0 {
		return 0, 0, true
	}
	last := m[len(m)-1]
	return m[0].Joined, last.Left, last.Left != 0
}
