package wire

import "github.com/klauspost/compress/zstd"

// Options follow one rule: each states its default and what moving it costs. Out-of-range values
// are clamped rather than rejected, because they come from configuration that was already
// validated upstream and a codec that refuses to start takes the whole gateway with it.

// ReaderOption configures NewReader.
type ReaderOption func(*readerConfig)

type readerConfig struct {
	maxStreams int
	maxMessage int64
	bufSize    int
}

func defaultReaderConfig() readerConfig {
	return readerConfig{maxStreams: 16, maxMessage: MaxPayload, bufSize: 4 << 10}
}

// WithMaxStreams bounds how many chunked messages may be half-received at once (default 16,
// clamped to [1, 65536]). Each open stream can buffer up to the message limit, so this times
// WithMaxMessageSize is the worst-case memory one connection can make the Reader hold. A
// conforming Writer needs two: one data message plus a chunked control message inside it.
func WithMaxStreams(n int) ReaderOption {
	return func(c *readerConfig) { c.maxStreams = min(max(n, 1), 1<<16) }
}

// WithMaxMessageSize lowers the per-message limit below MaxPayload (default MaxPayload; values
// above it or below 1 are clamped into [1, MaxPayload]). The gateway uses it to hold uplink
// messages to a tighter bound than downlink batches. It applies to the reassembled wire size and
// to the decompressed size; a compressed message is still decompressed up to MaxPayload before
// the tighter bound can be checked when zstd does not declare its size.
func WithMaxMessageSize(n int) ReaderOption {
	return func(c *readerConfig) { c.maxMessage = int64(min(max(n, 1), MaxPayload)) }
}

// WithReadBufferSize sets the bufio buffer in front of the source (default 4 KiB, minimum 16
// bytes). Larger buffers batch more small frames per read syscall; the cost is paid per
// connection, which on a gateway is the dominant multiplier. Payloads larger than the buffer
// are read straight into the payload slice, so it need not fit a chunk. A *bufio.Reader source
// is used as is and this option is ignored.
func WithReadBufferSize(n int) ReaderOption {
	return func(c *readerConfig) { c.bufSize = max(n, 16) }
}

// WriterOption configures NewWriter.
type WriterOption func(*writerConfig)

type writerConfig struct {
	dataDepth    int
	controlDepth int
	bufSize      int
	compressMin  int // 0: compression off
	level        zstd.EncoderLevel
}

func defaultWriterConfig() writerConfig {
	return writerConfig{dataDepth: 128, controlDepth: 16, bufSize: 16 << 10, level: zstd.SpeedFastest}
}

// WithQueueDepth bounds the data messages waiting for the writer goroutine (default 128, minimum
// 1). A full queue blocks Send, which is the back-pressure that stops a slow client from growing
// gateway memory; deeper queues absorb bursts but hold more caller payloads alive.
func WithQueueDepth(n int) WriterOption {
	return func(c *writerConfig) { c.dataDepth = max(n, 1) }
}

// WithControlQueueDepth bounds the control messages (PING, PONG, KICKED, ERROR) waiting for the
// writer (default 16, minimum 1). The queue is separate from the data queue so a backlog of data
// never blocks a PONG at Send; it is small because the protocol has few control frames in
// flight, and a peer that provokes more is misbehaving.
func WithControlQueueDepth(n int) WriterOption {
	return func(c *writerConfig) { c.controlDepth = max(n, 1) }
}

// WithWriteBufferSize sets the bufio buffer in front of the destination (default 16 KiB,
// minimum 64 bytes). It coalesces small frames into one write and is flushed only when the
// queue runs empty; larger buffers mean fewer syscalls under load but more memory per
// connection and more bytes a control frame may sit behind.
func WithWriteBufferSize(n int) WriterOption {
	return func(c *writerConfig) { c.bufSize = max(n, 64) }
}

// WithCompression compresses data messages whose payload is at least minBytes (default 0:
// off; values below 1 turn it off). Compression runs in the calling goroutine of Send, not in
// the writer, so one connection's big batch never delays another frame's turn at the socket.
// It trades sender CPU for bandwidth and is skipped per message when it does not shrink the
// payload. Control messages are never compressed: they are tiny and latency-bound. A message
// sent with FlagCompressed is compressed regardless of size.
func WithCompression(minBytes int) WriterOption {
	return func(c *writerConfig) { c.compressMin = max(minBytes, 0) }
}

// WithCompressionLevel picks the zstd level (default zstd.SpeedFastest; an unknown level falls
// back to it). Higher levels buy ratio with several times the CPU per byte.
func WithCompressionLevel(level zstd.EncoderLevel) WriterOption {
	return func(c *writerConfig) { c.level = validLevel(level) }
}
