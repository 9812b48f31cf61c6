package keyfamily

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// Where a family's keys name conversations, for the redis-artifacts gate's proof that a room
// never reaches Redis: a room's events live in its RoomWriter's memory only (ADR-0034), so a
// room conversation in any key name, sorted-set member or hash field is a leak of the room path
// into the durable stores (a mailbox entry, a session row, a read watermark, a seq counter).
//
// Rejected: recognising conversation ids by shape in every key and member of both instances.
// Binary members and ids share no marker, so a scan by shape would both miss (a cid inside a
// protobuf) and invent (16 random bytes whose top bits read as the room kind); the owner of a
// layout knows where its ids are.

// Members says which members of a family's keys name one conversation each.
type Members int

const (
	NoMembers  Members = iota // only the key's name may name one
	ZSetMember                // every member of the key's sorted set
	HashField                 // every field of the key's hash
)

// Conversations is where a family's keys name conversations. InKey, when set, reads the one in
// a key's name; OfMember, with In, reads the one each member or field names.
type Conversations struct {
	InKey    func(key string) (contract.ConversationID, bool)
	In       Members
	OfMember func(member string) (contract.ConversationID, error)
}

// WithConversations returns f with where its keys name conversations.
func (f Family) WithConversations(c Conversations) Family { f.Conv = &c; return f }

// HexFieldInKey reads the conversation id in the n-th ':'-separated field after f's prefix (0
// is the first), written as 32 lowercase hex digits, big-endian, as the stores' key builders
// write it.
func HexFieldInKey(prefix string, n int) func(key string) (contract.ConversationID, bool) {
	return func(key string) (contract.ConversationID, bool) {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			return contract.ConversationID{}, false
		}
		fields := strings.Split(rest, ":")
		if n >= len(fields) {
			return contract.ConversationID{}, false
		}
		c, err := RawConversation(hexBytes(fields[n]))
		return c, err == nil
	}
}

func hexBytes(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// RawConversation reads a member or field that is a conversation id's 16 raw bytes.
func RawConversation(m string) (contract.ConversationID, error) {
	u, err := contract.U128FromBytes([]byte(m))
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("keyfamily: conversation member of %d bytes: %w", len(m), err)
	}
	return contract.ConversationID(u), nil
}

// validateConversations checks that a declaration can read its own example's name.
func (f Family) validateConversations() error {
	c := f.Conv
	switch {
	case c == nil:
		return nil
	case c.InKey == nil && c.In == NoMembers:
		return fmt.Errorf("keyfamily: %s: conversations declared, but neither in the key nor in members", f.Name)
	case (c.In == NoMembers) != (c.OfMember == nil):
		return fmt.Errorf("keyfamily: %s: members that name conversations need OfMember, and only they", f.Name)
	}
	if c.InKey != nil {
		if _, ok := c.InKey(f.Example); !ok {
			return fmt.Errorf("keyfamily: %s: example %q names no conversation", f.Name, f.Example)
		}
	}
	return nil
}
