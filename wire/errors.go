package wire

import (
	"errors"
	"fmt"
	"io"
)

// Decode errors. Every one of them is terminal for the connection: the Reader keeps returning it
// and the owner must close the connection (see the package comment for why there is no resync).
// Callers branch on them with errors.Is, typically to pick the ERROR frame code before closing.
var (
	// ErrBadMagic means the first two header bytes are not "QM": the peer does not speak this
	// protocol at all (an HTTP request on the TCP port, a TLS hello on the plain port, ...).
	ErrBadMagic = errors.New("wire: bad magic")
	// ErrBadVersion means a Q-IM peer speaking a header version this build does not know.
	ErrBadVersion = errors.New("wire: unsupported header version")
	// ErrBadCRC means the header checksum does not match: the header is corrupt and no field in
	// it, in particular the length, can be trusted.
	ErrBadCRC = errors.New("wire: header crc mismatch")
	// ErrBadFlags means a flag bit that is reserved (including NEED_ACK) is set. A correct CRC
	// rules out corruption, so the peer deliberately uses something this build does not speak.
	ErrBadFlags = errors.New("wire: reserved flag bits set")
	// ErrOversize is matched by every *OversizeError.
	ErrOversize = errors.New("wire: payload exceeds limit")
	// ErrProtocol means frames that are each well formed but break the stream rules: a
	// continuation that does not match its stream's first chunk, or too many open streams.
	ErrProtocol = errors.New("wire: protocol violation")
	// ErrCompression means a COMPRESSED message is not a valid zstd stream.
	ErrCompression = errors.New("wire: bad compressed payload")
)

// errShortHeader is what ParseHeader returns for fewer than HeaderSize bytes: the same condition
// the Reader reports for a stream cut inside a header, so callers test one error for both.
var errShortHeader = fmt.Errorf("wire: short header: %w", io.ErrUnexpectedEOF)

// ErrClosed is returned by Writer.Send after Writer.Close.
var ErrClosed = errors.New("wire: writer closed")

// OversizeError reports a payload above its limit. It carries the numbers so the gateway can put
// them into the PAYLOAD_TOO_LARGE error it sends before closing; errors.Is(err, ErrOversize)
// holds for it.
type OversizeError struct {
	// Length is the offending size: a frame's declared length, a stream's reassembled length
	// including the frame that crossed the limit, or a decompressed size. When zstd does not
	// declare its decompressed size and decoding stops at the limit, Length is Limit+1,
	// meaning "more than Limit".
	Length int64
	// Limit is the bound that was exceeded.
	Limit int64
	// Decompressed is true when the limit was crossed by the decompressed payload; the bytes
	// on the wire were within bounds (a zip bomb, or a peer compressing an oversize message).
	Decompressed bool
}

func (e *OversizeError) Error() string {
	what := "payload"
	if e.Decompressed {
		what = "decompressed payload"
	}
	return fmt.Sprintf("wire: %s of %d bytes exceeds limit of %d", what, e.Length, e.Limit)
}

// Is makes errors.Is(err, ErrOversize) true without callers type-asserting.
func (e *OversizeError) Is(target error) bool { return target == ErrOversize }

// protocolError wraps ErrProtocol with the stream that broke the rules; the text is for logs,
// callers branch on ErrProtocol only.
func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}
