package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

const (
	// growStep is the first allocation for a payload of unknown eventual size. Buffers then
	// double, so a message of n bytes costs O(log n) allocations and at most n bytes of copying.
	growStep = 64 << 10
	// maxRetainedSpare caps the compressed-input buffer a Reader keeps between messages: one 4 MiB
	// compressed batch must not pin 4 MiB on an otherwise idle connection forever.
	maxRetainedSpare = 256 << 10
)

// Reader decodes a byte stream into logical messages: it validates each header, reassembles
// chunked messages per stream id, and decompresses COMPRESSED ones. It is owned by one goroutine
// (a connection's read loop); it holds no locks and starts no goroutines.
//
// The first error is terminal and sticky: every later ReadMessage returns it again. The owner
// must close the connection; there is no resynchronisation (see the package comment).
//
// Memory held per connection is the read buffer plus the open partial messages, each bounded by
// the message limit and grown only as its bytes actually arrive, so a header that lies about its
// length costs the peer bandwidth before it costs us memory.
type Reader struct {
	br      *bufio.Reader
	cfg     readerConfig
	hdr     [HeaderSize]byte // header scratch: decoding a header allocates nothing
	streams streamTable
	spare   []byte // reusable buffer for compressed input, which never escapes ReadMessage
	err     error
}

// NewReader returns a Reader decoding from src. A *bufio.Reader src is used directly, so a caller
// that already buffers the connection does not pay for a second copy.
func NewReader(src io.Reader, opts ...ReaderOption) *Reader {
	cfg := defaultReaderConfig()
	for _, o := range opts {
		o(&cfg)
	}
	br, ok := src.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(src, cfg.bufSize)
	}
	return &Reader{br: br, cfg: cfg, streams: streamTable{max: cfg.maxStreams}}
}

// ReadMessage returns the next complete message. Control frames interleaved between the chunks
// of a large message are returned as soon as they are complete, before that message. Payload is
// a fresh slice owned by the caller (see Message).
//
// It returns io.EOF when the stream ends cleanly between messages, an error matching
// io.ErrUnexpectedEOF when it ends inside a frame or with a chunked message incomplete, and one
// of the package's Err* values (or *OversizeError) for a protocol violation.
func (r *Reader) ReadMessage() (Message, error) {
	if r.err != nil {
		return Message{}, r.err
	}
	for {
		h, err := r.readHeader()
		var m Message
		var done bool
		if err == nil {
			m, done, err = r.consume(h)
		}
		if err != nil {
			r.fail(err)
			return Message{}, err
		}
		if done {
			return m, nil
		}
	}
}

// fail makes err sticky and releases every buffer now, not when the owner drops the Reader.
func (r *Reader) fail(err error) {
	r.err = err
	r.streams.reset()
	r.spare = nil
}

func (r *Reader) readHeader() (Header, error) {
	n, err := io.ReadFull(r.br, r.hdr[:])
	switch {
	case err == nil:
		return ParseHeader(r.hdr[:])
	case errors.Is(err, io.EOF) && n == 0 && len(r.streams.open) == 0:
		return Header{}, io.EOF
	case errors.Is(err, io.EOF) && n == 0:
		return Header{}, fmt.Errorf("wire: stream ended with %d chunked messages incomplete: %w",
			len(r.streams.open), io.ErrUnexpectedEOF)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Header{}, fmt.Errorf("wire: stream ended inside a header: %w", io.ErrUnexpectedEOF)
	default:
		return Header{}, fmt.Errorf("wire: read: %w", err)
	}
}

// consume applies one validated frame. It reports done with the message when the frame
// completes one. Every size check happens before the payload is read or memory is reserved.
func (r *Reader) consume(h Header) (Message, bool, error) {
	limit := r.cfg.maxMessage
	i := r.streams.find(h.StreamID)
	if i < 0 && h.Flags&FlagMore == 0 {
		// The common case: a whole message in one frame, no stream bookkeeping.
		if int64(h.Length) > limit {
			return Message{}, false, &OversizeError{Length: int64(h.Length), Limit: limit}
		}
		buf, err := r.readPayload(r.takeSpare(h.Flags), int(h.Length))
		if err != nil {
			return Message{}, false, err
		}
		m, err := r.finish(partial{stream: h.StreamID, opcode: h.Opcode, request: h.RequestID,
			flags: h.Flags & FlagCompressed, buf: buf})
		return m, err == nil, err
	}
	if i < 0 {
		if int64(h.Length) > limit {
			return Message{}, false, &OversizeError{Length: int64(h.Length), Limit: limit}
		}
		var err error
		if i, err = r.streams.add(h, r.takeSpare(h.Flags)); err != nil {
			return Message{}, false, err
		}
	} else {
		p := &r.streams.open[i]
		if !p.matches(h) {
			return Message{}, false, protocolError("stream %d: chunk of %v request %d flags %#x continues %v request %d flags %#x",
				h.StreamID, h.Opcode, h.RequestID, h.Flags, p.opcode, p.request, p.flags)
		}
		if total := int64(len(p.buf)) + int64(h.Length); total > limit {
			return Message{}, false, &OversizeError{Length: total, Limit: limit}
		}
	}
	p := &r.streams.open[i]
	var err error
	if p.buf, err = r.readPayload(p.buf, int(h.Length)); err != nil || h.Flags&FlagMore != 0 {
		return Message{}, false, err
	}
	m, err := r.finish(r.streams.remove(i))
	return m, err == nil, err
}

// finish turns a fully received message into the caller's Message.
func (r *Reader) finish(p partial) (Message, error) {
	m := Message{Opcode: p.opcode, StreamID: p.stream, RequestID: p.request, Flags: p.flags}
	if p.flags&FlagCompressed == 0 {
		m.Payload = p.buf // freshly allocated by readPayload and referenced nowhere else
		return m, nil
	}
	out, err := decompress(p.buf, r.cfg.maxMessage)
	r.keepSpare(p.buf)
	m.Payload = out
	return m, err
}

// takeSpare lends the compressed-input buffer to a compressed message. Uncompressed messages
// get nil so their payload is always a fresh allocation the caller may keep.
func (r *Reader) takeSpare(f Flags) []byte {
	if f&FlagCompressed == 0 {
		return nil
	}
	b := r.spare[:0]
	r.spare = nil
	return b
}

func (r *Reader) keepSpare(b []byte) {
	if cap(b) <= maxRetainedSpare && cap(b) > cap(r.spare) {
		r.spare = b[:0]
	}
}

// readPayload appends exactly n payload bytes to dst. It grows dst as bytes arrive rather than
// from the declared length, so memory tracks what the peer actually sent.
func (r *Reader) readPayload(dst []byte, n int) ([]byte, error) {
	for n > 0 {
		if len(dst) == cap(dst) {
			dst = grow(dst, n)
		}
		step := min(n, cap(dst)-len(dst))
		got, err := io.ReadFull(r.br, dst[len(dst):len(dst)+step])
		dst = dst[:len(dst)+got]
		n -= got
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return dst, fmt.Errorf("wire: stream ended inside a payload, %d bytes short: %w",
					n, io.ErrUnexpectedEOF)
			}
			return dst, fmt.Errorf("wire: read: %w", err)
		}
	}
	return dst, nil
}

// grow returns b with room for more bytes, at most need more: double the capacity (at least
// growStep) but never beyond what the current frame still declares.
func grow(b []byte, need int) []byte {
	c := min(max(2*cap(b), len(b)+growStep), len(b)+need)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
