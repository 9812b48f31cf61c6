package wire

import (
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/qim-dev/qim/contract"
)

// Message is one logical message: what Reader.ReadMessage returns and what AppendMessage and
// Writer.Send take. Chunking is invisible at this level.
type Message struct {
	Opcode    contract.Opcode
	StreamID  uint16
	RequestID uint32
	// Flags, on a decoded message, has FlagCompressed set when the message travelled
	// compressed; Payload is decompressed regardless and FlagMore is never set. On encode,
	// FlagCompressed asks for compression, which is skipped when it would not make the payload
	// smaller; any other bit is rejected with ErrBadFlags.
	Flags Flags
	// Payload from a Reader is a fresh slice the caller owns: it stays valid after the next
	// ReadMessage and may be handed to another goroutine. Given to AppendMessage or
	// Writer.Send it is only read, and must not be modified until the call returns.
	Payload []byte
}

// scratchPool holds compression buffers for AppendMessage, whose compressed bytes are copied
// into dst and therefore never escape the call.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// AppendMessage appends m to dst as one or more frames: payloads above ChunkSize are split into
// ChunkSize chunks on m.StreamID, all but the last carrying FlagMore. It is the stateless
// encoder for callers that batch their own writes; the Writer adds queueing, control-frame
// priority and compression thresholds on top of the same framing.
func AppendMessage(dst []byte, m Message) ([]byte, error) {
	if m.Flags&^FlagCompressed != 0 {
		return dst, ErrBadFlags
	}
	if len(m.Payload) > MaxPayload {
		return dst, &OversizeError{Length: int64(len(m.Payload)), Limit: MaxPayload}
	}
	h := Header{Opcode: m.Opcode, StreamID: m.StreamID, RequestID: m.RequestID}
	if m.Flags&FlagCompressed == 0 {
		return appendChunks(dst, h, m.Payload), nil
	}
	bp := scratchPool.Get().(*[]byte)
	z, ok := compress(*bp, m.Payload, zstd.SpeedFastest)
	payload := m.Payload
	if ok {
		payload, h.Flags = z, FlagCompressed
	}
	dst = appendChunks(dst, h, payload)
	*bp = z[:0]
	scratchPool.Put(bp)
	return dst, nil
}

// appendChunks frames payload under h, which must already be valid. An empty payload still
// yields one frame: the message exists even when it carries no bytes.
func appendChunks(dst []byte, h Header, payload []byte) []byte {
	frames := max(1, (len(payload)+ChunkSize-1)/ChunkSize)
	dst = slices.Grow(dst, frames*HeaderSize+len(payload))
	for {
		n := min(len(payload), ChunkSize)
		fh := h
		fh.Length = uint32(n)
		if n < len(payload) {
			fh.Flags |= FlagMore
		}
		dst = AppendHeader(dst, fh)
		dst = append(dst, payload[:n]...)
		payload = payload[n:]
		if len(payload) == 0 {
			return dst
		}
	}
}
