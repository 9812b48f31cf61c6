package inspect

import (
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Members says which members of a family's keys name one conversation each.
type Members = keyfamily.Members

// Where members name conversations (RedisKeyFamily.ConversationMembers).
const (
	NoMembers  = keyfamily.NoMembers
	ZSetMember = keyfamily.ZSetMember
	HashField  = keyfamily.HashField
)

// NamesConversations reports whether the family's keys name conversations, in their names or
// their members, as the owning store declares it.
func (r RedisKeyFamily) NamesConversations() bool { return r.f.Conv != nil }

// ConversationInKey is the conversation key's name holds, for a family whose names hold one.
func (r RedisKeyFamily) ConversationInKey(key string) (contract.ConversationID, bool) {
	if r.f.Conv == nil || r.f.Conv.InKey == nil {
		return contract.ConversationID{}, false
	}
	return r.f.Conv.InKey(key)
}

// ConversationMembers says which members of the family's keys name a conversation each.
func (r RedisKeyFamily) ConversationMembers() Members {
	if r.f.Conv == nil {
		return NoMembers
	}
	return r.f.Conv.In
}

// MemberConversation is the conversation a member (or hash field) names; an error is a member
// the owner's format does not read.
func (r RedisKeyFamily) MemberConversation(m string) (contract.ConversationID, error) {
	return r.f.Conv.OfMember(m)
}
