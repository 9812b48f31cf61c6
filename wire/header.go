package wire

import (
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/qim-dev/qim/contract"
)

// Frozen header constants; the byte table is in doc.go. Changing any of them breaks every
// shipped client, so a new layout must come with a new Version instead.
const (
	HeaderSize = 20     // bytes of every frame header
	Magic      = 0x514D // "QM"
	Version    = 1      // the only header version this build speaks

	crcOffset = 16 // the CRC covers bytes [0, crcOffset)
)

// Flags is the header's flag byte.
type Flags uint8

const (
	// FlagCompressed marks a logical message whose on-wire payload is one zstd stream. Every
	// chunk of the message carries it, so a receiver knows on the first chunk.
	FlagCompressed Flags = 0x01
	// FlagMore marks a chunk that is followed by more chunks of the same message on the same
	// stream. The last chunk (and a single-frame message) has it clear.
	FlagMore Flags = 0x02
	// FlagNeedAck is reserved by the contract and never used; a frame carrying it is rejected
	// so that a peer cannot come to rely on acknowledgements this codec never sends.
	FlagNeedAck Flags = 0x04

	// knownFlags are the bits a frame may carry. NEED_ACK is deliberately absent.
	knownFlags = FlagCompressed | FlagMore
)

// castagnoli is the CRC32C table; hash/crc32 uses the SSE4.2/ARMv8 instruction for it, which is
// why the header CRC is CRC32C rather than IEEE.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a decoded frame header without the constant magic/version and the derived CRC.
type Header struct {
	Flags     Flags
	Opcode    contract.Opcode
	StreamID  uint16
	RequestID uint32
	Length    uint32 // payload bytes of this frame only
}

// putHeader encodes h into b. It takes an array pointer so hot paths encode into a buffer they
// own without a bounds check per field or an escape to the heap.
func putHeader(b *[HeaderSize]byte, h Header) {
	binary.BigEndian.PutUint16(b[0:2], Magic)
	b[2] = Version
	b[3] = byte(h.Flags)
	binary.BigEndian.PutUint16(b[4:6], uint16(h.Opcode))
	binary.BigEndian.PutUint16(b[6:8], h.StreamID)
	binary.BigEndian.PutUint32(b[8:12], h.RequestID)
	binary.BigEndian.PutUint32(b[12:16], h.Length)
	binary.BigEndian.PutUint32(b[16:20], crc32.Checksum(b[:crcOffset], castagnoli))
}

// AppendHeader appends the 20-byte encoding of h to dst. It does not validate h; AppendFrame
// does, so use it unless you are writing a test that needs a bad header on the wire.
func AppendHeader(dst []byte, h Header) []byte {
	// Encode in place: a local array would escape to the heap because hash/crc32 reaches its
	// Castagnoli implementation through a function variable.
	n := len(dst)
	dst = slices.Grow(dst, HeaderSize)[:n+HeaderSize]
	putHeader((*[HeaderSize]byte)(dst[n:]), h)
	return dst
}

// ParseHeader decodes and validates the first HeaderSize bytes of b. The checks run from the
// most to the least diagnostic: magic (not our protocol), version (our protocol, other
// revision), CRC (corruption), then flags, so an old or foreign peer is reported as such rather
// than as a checksum failure. ParseHeader does not check Length against a limit; that depends
// on the reader's state.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, errShortHeader
	}
	if binary.BigEndian.Uint16(b[0:2]) != Magic {
		return Header{}, ErrBadMagic
	}
	if b[2] != Version {
		return Header{}, ErrBadVersion
	}
	if crc32.Checksum(b[:crcOffset], castagnoli) != binary.BigEndian.Uint32(b[16:20]) {
		return Header{}, ErrBadCRC
	}
	h := Header{
		Flags:     Flags(b[3]),
		Opcode:    contract.Opcode(binary.BigEndian.Uint16(b[4:6])),
		StreamID:  binary.BigEndian.Uint16(b[6:8]),
		RequestID: binary.BigEndian.Uint32(b[8:12]),
		Length:    binary.BigEndian.Uint32(b[12:16]),
	}
	if h.Flags&^knownFlags != 0 {
		return Header{}, ErrBadFlags
	}
	return h, nil
}

// AppendFrame appends one frame, header then payload, to dst. h.Length is ignored and set from
// len(payload). It refuses what a Reader would reject — reserved flags or a payload above
// MaxPayload — so this codec can never emit a frame its own decoder kills the connection for.
// Splitting a message into chunks is AppendMessage's job; AppendFrame writes exactly one frame.
func AppendFrame(dst []byte, h Header, payload []byte) ([]byte, error) {
	if h.Flags&^knownFlags != 0 {
		return dst, ErrBadFlags
	}
	if len(payload) > MaxPayload {
		return dst, &OversizeError{Length: int64(len(payload)), Limit: MaxPayload}
	}
	h.Length = uint32(len(payload))
	dst = AppendHeader(dst, h)
	return append(dst, payload...), nil
}
