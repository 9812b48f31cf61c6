package wire

import "github.com/qim-dev/qim/contract"

// The wire limits of docs/architecture.md, section 6. The contract package owns the values (its
// lint rejects redeclared contract constants); these names only alias them so codec callers and
// tests can speak in wire terms, and they cannot drift because they are not separate values.
const (
	// MaxPayload bounds a logical message: its reassembled on-wire payload and, when compressed,
	// its decompressed payload. A frame or message above it is a protocol violation.
	MaxPayload = contract.MaxFramePayload
	// ChunkSize is the largest frame payload the Writer emits. Small enough that a control frame
	// queued behind a 4 MiB message waits for at most one chunk, large enough that the 20-byte
	// header is noise (0.03%).
	ChunkSize = contract.StreamWriteChunkBytes
)

// Compile-time guards: if the contract ever moves these values, the build fails here rather than
// the codec silently truncating a length into the u32 header field or emitting zero-size chunks.
var (
	_ [MaxPayload - ChunkSize]struct{} // ChunkSize <= MaxPayload
	_ [1<<32 - 1 - MaxPayload]struct{} // MaxPayload fits the u32 length field
	_ [ChunkSize - 1]struct{}          // ChunkSize >= 1
)
