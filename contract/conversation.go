package contract

import (
	"encoding/binary"
	"errors"
	"fmt"

	"lukechampine.com/blake3"
)

// ConversationKind is stored in the top 4 bits of a ConversationID, so the kind of any id is
// known without a lookup and ids of different kinds can never collide.
type ConversationKind uint8

const (
	KindInvalid ConversationKind = 0
	KindDirect  ConversationKind = 1
	KindGroup   ConversationKind = 2
	KindRoom    ConversationKind = 3
)

func (k ConversationKind) String() string {
	switch k {
	case KindDirect:
		return "direct"
	case KindGroup:
		return "group"
	case KindRoom:
		return "room"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ConversationID is a u128 whose top 4 bits are the ConversationKind and whose low 124 bits
// identify the conversation within its kind.
type ConversationID U128

const kindShift = 60 // within Hi

// ErrConversationID is returned for ids with an invalid kind or a degenerate direct pair.
var ErrConversationID = errors.New("contract: invalid conversation id")

// Kind returns the kind encoded in the id.
func (c ConversationID) Kind() ConversationKind { return ConversationKind(c.Hi >> kindShift) }

// Bytes is the 16-byte big-endian storage and wire form.
func (c ConversationID) Bytes() [16]byte { return U128(c).Bytes() }

func (c ConversationID) String() string { return U128(c).String() }

// withKind replaces the top 4 bits of u with k: the "strip kind, set kind" normalisation.
func withKind(u U128, k ConversationKind) ConversationID {
	u.Hi = u.Hi&(1<<kindShift-1) | uint64(k)<<kindShift
	return ConversationID(u)
}

// DirectConversationID derives the one conversation between two users of a tenant. The pair is
// ordered first, so (a, b) and (b, a) give the same id and neither side can create a second one.
// A user talking to themself gets a conversation too (a == b is allowed: "notes to self").
func DirectConversationID(tenant TenantID, a, b UserID) ConversationID {
	if a > b {
		a, b = b, a
	}
	var buf [len(DomainDirectConversation) + 16 + 8 + 8]byte
	n := copy(buf[:], DomainDirectConversation)
	binary.BigEndian.PutUint64(buf[n:], tenant.Hi)
	binary.BigEndian.PutUint64(buf[n+8:], tenant.Lo)
	binary.BigEndian.PutUint64(buf[n+16:], uint64(a))
	binary.BigEndian.PutUint64(buf[n+24:], uint64(b))
	sum := blake3.Sum256(buf[:])
	u, _ := U128FromBytes(sum[:16])
	return withKind(u, KindDirect)
}

// GroupConversationID canonicalises a wire group id: whatever kind bits the client sent are
// stripped and replaced by KindGroup, so uniqueness and authorisation use one key per group and
// the server never keeps a raw and a canonical copy side by side.
func GroupConversationID(groupID U128) (ConversationID, error) {
	c := withKind(groupID, KindGroup)
	if U128(withKind(groupID, 0)).IsZero() {
		return ConversationID{}, fmt.Errorf("%w: zero group id", ErrConversationID)
	}
	return c, nil
}

// RoomConversationID canonicalises a wire room id the same way as groups.
func RoomConversationID(roomID U128) (ConversationID, error) {
	if U128(withKind(roomID, 0)).IsZero() {
		return ConversationID{}, fmt.Errorf("%w: zero room id", ErrConversationID)
	}
	return withKind(roomID, KindRoom), nil
}

// ParseConversationID decodes 16 wire bytes and rejects unknown kinds.
func ParseConversationID(b []byte) (ConversationID, error) {
	u, err := U128FromBytes(b)
	if err != nil {
		return ConversationID{}, fmt.Errorf("contract: conversation_id: %w", err)
	}
	c := ConversationID(u)
	switch c.Kind() {
	case KindDirect, KindGroup, KindRoom:
		return c, nil
	}
	return ConversationID{}, fmt.Errorf("%w: kind %d", ErrConversationID, c.Kind())
}
