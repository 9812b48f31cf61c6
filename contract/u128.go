package contract

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// U128 is an unsigned 128-bit value stored as two big-endian halves, so == compares values and
// Compare orders them exactly as their 16-byte big-endian encodings sort (the storage form:
// CQL blob, Redis key bytes and protobuf bytes all use those 16 bytes).
type U128 struct{ Hi, Lo uint64 }

// ErrBadLength is returned when a byte slice that must hold a 16-byte id has another length.
var ErrBadLength = errors.New("contract: id must be exactly 16 bytes")

// U128FromBytes decodes a 16-byte big-endian value.
func U128FromBytes(b []byte) (U128, error) {
	if len(b) != 16 {
		return U128{}, fmt.Errorf("%w (got %d)", ErrBadLength, len(b))
	}
	return U128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}, nil
}

// Bytes returns the 16-byte big-endian encoding.
func (u U128) Bytes() [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.Hi)
	binary.BigEndian.PutUint64(b[8:], u.Lo)
	return b
}

// AppendBytes appends the 16-byte big-endian encoding to dst (no allocation when dst has room).
func (u U128) AppendBytes(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, u.Hi)
	return binary.BigEndian.AppendUint64(dst, u.Lo)
}

// IsZero reports whether u is zero; a zero id is never valid on the wire.
func (u U128) IsZero() bool { return u.Hi == 0 && u.Lo == 0 }

// Compare returns -1, 0 or +1 ordering u against v as unsigned 128-bit integers.
func (u U128) Compare(v U128) int {
	switch {
	case u.Hi < v.Hi:
		return -1
	case u.Hi > v.Hi:
		return 1
	case u.Lo < v.Lo:
		return -1
	case u.Lo > v.Lo:
		return 1
	}
	return 0
}

// String is 32 lowercase hex digits, the form used in paths and logs.
func (u U128) String() string {
	b := u.Bytes()
	return hex.EncodeToString(b[:])
}

// ParseU128 parses 32 hex digits.
func ParseU128(s string) (U128, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return U128{}, fmt.Errorf("contract: parse u128 %q: %w", s, err)
	}
	return U128FromBytes(b)
}

// TenantID identifies a tenant. The single-tenant legacy deployment uses tenant 0.
type TenantID = U128

// UserID identifies a user inside a tenant.
type UserID uint64

// ClientMessageID is the client's 16-byte idempotency id for one send. Zero is invalid.
type ClientMessageID U128

// ErrZeroID is returned for an id that must not be zero (client_message_id, message_id, ...).
var ErrZeroID = errors.New("contract: id must not be zero")

// ParseClientMessageID validates a client_message_id from the wire: exactly 16 bytes, not zero.
// The gateway rejects anything else with INVALID_ARGUMENT before it reaches the writer.
func ParseClientMessageID(b []byte) (ClientMessageID, error) {
	u, err := U128FromBytes(b)
	if err != nil {
		return ClientMessageID{}, fmt.Errorf("contract: client_message_id: %w", err)
	}
	if u.IsZero() {
		return ClientMessageID{}, fmt.Errorf("contract: client_message_id: %w", ErrZeroID)
	}
	return ClientMessageID(u), nil
}
