package contract

import (
	"errors"
	"fmt"
)

// MessageID is the u128 hybrid logical clock id of a message. last_activity_id uses the same
// format and space, so the two compare directly. Bit layout, most significant first:
//
//	bits 127..80  time_ms    48  Unix milliseconds of the writer's HLC (good until year 10889)
//	bits  79..48  logical    32  HLC counter within one millisecond of one writer
//	bits  47..32  region_id  16  deployment region
//	bits  31..16  writer_id  16  from the writer's Redis lease; two writers never share it
//	bits  15..0   reserved   16  zero in version 1
//
// Time first makes ids sortable by creation time across writers; region and writer below the
// counter make two writers issuing in the same millisecond produce different ids (without
// writer_id, clients deduplicating by message_id would show two messages as one).
type MessageID U128

// LastActivityID orders conversations in a session list; same format as MessageID.
type LastActivityID = MessageID

const (
	maxTimeMs = 1<<48 - 1
	maxRegion = 1<<16 - 1
	maxWriter = 1<<16 - 1
)

// ErrMessageIDField is returned when a MessageID component is out of range.
var ErrMessageIDField = errors.New("contract: message_id field out of range")

// NewMessageID packs the HLC components. It rejects a zero time (a zero id is never valid).
func NewMessageID(timeMs uint64, logical uint32, regionID, writerID uint16) (MessageID, error) {
	if timeMs == 0 || timeMs > maxTimeMs {
		return MessageID{}, fmt.Errorf("%w: time_ms %d", ErrMessageIDField, timeMs)
	}
	hi := timeMs<<16 | uint64(logical>>16)
	lo := uint64(logical&0xFFFF)<<48 | uint64(regionID)<<32 | uint64(writerID)<<16
	return MessageID{Hi: hi, Lo: lo}, nil
}

// TimeMs is the HLC wall-clock component.
func (m MessageID) TimeMs() uint64 { return m.Hi >> 16 }

// Logical is the HLC counter.
func (m MessageID) Logical() uint32 { return uint32(m.Hi&0xFFFF)<<16 | uint32(m.Lo>>48) }

// RegionID is the issuing region.
func (m MessageID) RegionID() uint16 { return uint16(m.Lo >> 32) }

// WriterID is the issuing writer's lease id.
func (m MessageID) WriterID() uint16 { return uint16(m.Lo >> 16) }

// Reserved returns the low 16 bits, zero for every id this version issues.
func (m MessageID) Reserved() uint16 { return uint16(m.Lo) }

// Compare orders ids; larger means later on the HLC.
func (m MessageID) Compare(o MessageID) int { return U128(m).Compare(U128(o)) }

// Bytes is the 16-byte big-endian storage and wire form.
func (m MessageID) Bytes() [16]byte { return U128(m).Bytes() }

// IsZero reports the invalid zero id.
func (m MessageID) IsZero() bool { return U128(m).IsZero() }

func (m MessageID) String() string { return U128(m).String() }

// ParseMessageID decodes 16 wire bytes, rejecting zero and a non-zero reserved field.
func ParseMessageID(b []byte) (MessageID, error) {
	u, err := U128FromBytes(b)
	if err != nil {
		return MessageID{}, fmt.Errorf("contract: message_id: %w", err)
	}
	m := MessageID(u)
	if m.IsZero() {
		return MessageID{}, fmt.Errorf("contract: message_id: %w", ErrZeroID)
	}
	if m.Reserved() != 0 {
		return MessageID{}, fmt.Errorf("%w: reserved bits %#04x", ErrMessageIDField, m.Reserved())
	}
	return m, nil
}
