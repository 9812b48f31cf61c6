// Package wire is the client frame codec shared by the gateway and the SDK: it turns logical
// messages into frames on a byte stream (TCP, TLS or WebSocket binary messages carry the same
// bytes) and back. It owns the frame header, chunking, per-stream reassembly, zstd compression
// of payloads, and the per-connection write queue that lets control frames overtake data.
//
// # Frame header (frozen)
//
// Every frame is a 20-byte big-endian header followed by Length payload bytes. Shipped clients
// parse this layout, so it never changes in place; a different layout is a new Version.
//
//	offset  size  field       value
//	0       2     magic       0x514D ("QM")
//	2       1     version     1
//	3       1     flags       0x01 COMPRESSED  the logical message's payload is one zstd stream;
//	                                           set on every chunk of that message
//	                          0x02 MORE        more chunks of this message follow on this stream
//	                          0x04 NEED_ACK    reserved by the contract, never sent; rejected
//	                          0xF8             must be zero; rejected
//	4       2     opcode      contract.Opcode
//	6       2     stream id   chunks of one message share it; streams let control frames
//	                          interleave with the chunks of a large message
//	8       4     request id  correlates a request and its response on one connection
//	12      4     length      payload bytes of THIS frame (not of the whole message)
//	16      4     header crc  CRC32C (Castagnoli) over bytes 0..15; covers the header only
//
// The CRC covers the header only because the header is what a receiver acts on before it has the
// payload (the length decides how much to read and allocate); payload integrity is the
// transport's job (TCP checksums, TLS MACs) and, for compressed payloads, zstd's checksum.
//
// # Messages, chunks and streams
//
// A logical message of up to MaxPayload bytes travels as one frame or, above ChunkSize, as
// consecutive chunk frames on one stream id with MORE set on all but the last. Chunks of one
// message must repeat its opcode, request id and COMPRESSED bit; a stream carries one message at
// a time. Frames of other streams may appear between two chunks: that is how the Writer gets a
// PONG out in the middle of a 4 MiB MAILBOX_BATCH. The Writer puts control messages on
// ControlStream and all others on DataStream and never interleaves two data messages; the
// Reader accepts any stream ids, up to a bound on how many are half-received at once.
//
// MaxPayload bounds the reassembled bytes on the wire and, for a compressed message, the
// decompressed bytes too. A compressed payload is one or more zstd frames whose declared window
// is at most MaxPayload (single-shot compression, which declares the content size, always
// qualifies; streaming encoders must be configured for it), else it is ErrCompression. The Reader checks every bound before it reads or reserves a payload,
// and grows buffers as bytes arrive, so neither a lying length field nor a zip bomb can make it
// hold more than the configured limits.
//
// # Errors are terminal
//
// Any decode error (bad magic, version, CRC or flags, an oversize frame or message, a stream
// rule broken, a bad zstd payload, truncation) ends the connection: the Reader returns the same
// error forever and the owner closes the connection, after sending an ERROR frame if it wants
// to. There is no resynchronisation. A length that may be corrupt leaves no trustworthy frame
// boundary, and scanning forward for the next magic would let a payload — chosen by the peer —
// masquerade as a header. Clients reconnect and resume from their cursors, which the protocol
// makes cheap; guessing at frame boundaries would make it unsafe.
//
// # Ownership
//
// Reader.ReadMessage returns a Payload the caller owns outright (a fresh slice per message), so
// it can be handed to another goroutine without copying; the header and compressed input are
// decoded in reused buffers. Writer.Send reads the caller's Payload until it returns. The codec
// never closes the connection it reads from or writes to: that belongs to the connection's owner.
//
// # What this package must never do
//
//   - Interpret payloads. It frames bytes; protobuf decoding and opcode semantics belong to the
//     gateway and SDK. The only opcode property it uses is contract.Opcode.IsControl.
//   - Import anything of this module but contract, so the SDK can embed it.
//   - Resynchronise after an error, or allocate from a declared length before the bytes arrive.
//   - Start a goroutine other than a Writer's own, which Close waits for, or keep an unbounded
//     queue.
//   - Emit a frame its own Reader would reject: encoders validate flags and sizes the same way.
package wire
