package wire

import "github.com/qim-dev/qim/contract"

// partial is a chunked message whose last chunk has not arrived yet. The first chunk fixes the
// opcode, request id and compression of the whole message; continuations must repeat them.
type partial struct {
	stream  uint16
	opcode  contract.Opcode
	request uint32
	flags   Flags // FlagCompressed or 0
	buf     []byte
}

// matches reports whether a continuation frame belongs to p. A mismatch means two messages
// were interleaved on one stream, which would otherwise splice one message's bytes into another.
func (p *partial) matches(h Header) bool {
	return p.opcode == h.Opcode && p.request == h.RequestID && (p.flags^h.Flags)&FlagCompressed == 0
}

// streamTable holds the open partials. A slice with a linear scan beats a map at the sizes the
// bound allows (16 by default), and after the first few messages it allocates nothing per frame.
type streamTable struct {
	open []partial
	max  int
}

func (t *streamTable) find(stream uint16) int {
	for i := range t.open {
		if t.open[i].stream == stream {
			return i
		}
	}
	return -1
}

// add opens a stream for the first chunk described by h, or fails when the bound is reached: a
// peer that keeps streams half-sent is pinning our memory, and a conforming writer never needs
// more than a handful.
func (t *streamTable) add(h Header, buf []byte) (int, error) {
	if len(t.open) >= t.max {
		return -1, protocolError("stream %d would exceed %d concurrently open streams", h.StreamID, t.max)
	}
	t.open = append(t.open, partial{
		stream:  h.StreamID,
		opcode:  h.Opcode,
		request: h.RequestID,
		flags:   h.Flags & FlagCompressed,
		buf:     buf,
	})
	return len(t.open) - 1, nil
}

// remove closes stream i and hands its partial to the caller. Order in the table carries no
// meaning, so the last entry fills the hole.
func (t *streamTable) remove(i int) partial {
	p := t.open[i]
	last := len(t.open) - 1
	t.open[i] = t.open[last]
	t.open[last] = partial{} // drop the buffer reference so the caller's message is its only owner
	t.open = t.open[:last]
	return p
}

// reset drops every partial, releasing their buffers once the connection is dead.
func (t *streamTable) reset() {
	clear(t.open)
	t.open = t.open[:0]
}
