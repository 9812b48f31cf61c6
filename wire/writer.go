package wire

import (
	"bufio"
	"context"
	"io"
	"sync"
)

// Stream ids the Writer assigns. Callers do not choose streams: the only interleaving the Writer
// performs is control frames between data chunks, and that is safe exactly when the two kinds
// never share a stream. Message.StreamID is therefore ignored by Send.
const (
	ControlStream uint16 = 0 // PING, PONG, KICKED, ERROR
	DataStream    uint16 = 1 // everything else
)

// Writer frames messages onto one io.Writer for many concurrent senders.
//
// Invariants:
//   - Exactly one goroutine, started by NewWriter and waited for by Close, touches the io.Writer.
//   - Frames of one message are contiguous except that whole control messages may be placed
//     between two data chunks; data messages leave in Send order and are never interleaved with
//     each other, so the peer has at most two streams open.
//   - Both queues are bounded and a full queue blocks Send (back-pressure). Every queued request
//     gets exactly one result, even when the connection dies, unless its sender withdrew it
//     before the writer reached it.
//   - Send returns nil only once every byte of its message has been handed to the io.Writer.
//
// How it works: Send compresses in the caller's goroutine and enqueues a pooled request on the
// control or data channel, then waits. The writer goroutine takes control first, writes data in
// ChunkSize frames draining control between chunks, and flushes only when both queues are empty.
//
// Rejected alternative: a mutex around the io.Writer, each sender writing its own frames. It has
// no goroutine, but a sender writing a 4 MiB batch to a slow socket holds the lock for the whole
// message, so a PONG waits behind it long enough to trip the peer's heartbeat, and every sender
// must flush because none knows whether another is coming. Interleaving the chunks of several
// data streams was also rejected: it needs per-stream queues and a fairness policy, raises the
// peer's reassembly memory, and buys nothing the control-frame bypass does not already give.
type Writer struct {
	cfg  writerConfig
	ctrl chan *request // bounded control queue
	data chan *request // bounded data queue

	// stop is closed once, by Close or by a write failure; stopErr is set before it closes and
	// is what Send returns afterwards. Senders hold gate's read side while they may enqueue; the
	// writer takes the write side once after stop, after which no sender can enqueue, so an
	// empty queue is final and no request is stranded.
	stop     chan struct{}
	stopOnce sync.Once
	stopErr  error
	gate     sync.RWMutex
	done     chan struct{} // closed when the writer goroutine has returned

	// Owned by the writer goroutine. out counts bytes that reached dst, which is how a message
	// left in the buffer learns it has gone out without a flush per message.
	out      countingWriter
	bw       *bufio.Writer
	hdr      [HeaderSize]byte
	inflight []*request // buffered but not yet known to have reached the io.Writer, in order
	sealed   bool
	failErr  error // read by Close after done is closed
}

// NewWriter starts a Writer on dst. The caller owns the returned Writer and must Close it: Close
// is what waits for the writer goroutine. Closing dst (the connection) stays the caller's job.
func NewWriter(dst io.Writer, opts ...WriterOption) *Writer {
	cfg := defaultWriterConfig()
	for _, o := range opts {
		o(&cfg)
	}
	w := &Writer{
		cfg:  cfg,
		ctrl: make(chan *request, cfg.controlDepth),
		data: make(chan *request, cfg.dataDepth),
		stop: make(chan struct{}),
		done: make(chan struct{}),
		out:  countingWriter{w: dst},
	}
	w.bw = bufio.NewWriterSize(&w.out, cfg.bufSize)
	go w.run()
	return w
}

// Send queues m and waits until it has been written to the io.Writer. Control opcodes
// (contract.Opcode.IsControl) go on ControlStream, overtake queued and half-written data, and
// are never compressed; all others go on DataStream in Send order. m.StreamID is ignored.
// m.Payload must not be modified until Send returns.
//
// Send blocks while the queue is full. If ctx ends before the writer has started on m, Send
// returns ctx.Err() and m is never written; once the writer has started, Send waits for the
// outcome regardless of ctx, because the writer is still reading m.Payload (a stalled connection
// is unblocked by the owner's write deadline or by closing it). After Close, Send returns
// ErrClosed; after a write failure, the wrapped write error.
func (w *Writer) Send(ctx context.Context, m Message) error {
	req, err := w.submit(ctx, m)
	if err != nil {
		return err
	}
	return w.await(ctx, req)
}

// QueueLen is the number of messages waiting for the writer goroutine, excluding the one being
// written (a send withdrawn by its context counts until the writer discards it). Gateways export it per connection to spot slow consumers before Send blocks.
func (w *Writer) QueueLen() int { return len(w.ctrl) + len(w.data) }

// Close stops accepting messages, writes and flushes everything already queued, and waits for
// the writer goroutine. It returns nil if all of it reached the io.Writer, else the write error
// that failed the remaining sends. Close blocks as long as the io.Writer does; to abandon a dead
// peer, close the connection first. Close is idempotent.
func (w *Writer) Close() error {
	w.halt(ErrClosed)
	<-w.done
	return w.failErr
}

func (w *Writer) halt(err error) {
	w.stopOnce.Do(func() {
		w.stopErr = err
		close(w.stop)
	})
}

// submit validates and prepares m and puts it on its queue. It is split from Send so tests can
// hold a message in the queue and decide when to wait for it.
func (w *Writer) submit(ctx context.Context, m Message) (*request, error) {
	if m.Flags&^FlagCompressed != 0 {
		return nil, ErrBadFlags
	}
	if len(m.Payload) > MaxPayload {
		return nil, &OversizeError{Length: int64(len(m.Payload)), Limit: MaxPayload}
	}
	select {
	case <-w.stop:
		return nil, w.stopErr // fail fast, before paying for compression
	default:
	}
	req := getRequest()
	w.prepare(req, m)
	q := w.data
	if req.control {
		q = w.ctrl
	}
	w.gate.RLock()
	defer w.gate.RUnlock()
	select {
	case <-w.stop:
		putRequest(req)
		return nil, w.stopErr
	default:
	}
	select {
	case q <- req:
		return req, nil
	case <-w.stop:
		putRequest(req)
		return nil, w.stopErr
	case <-ctx.Done():
		putRequest(req)
		return nil, ctx.Err()
	}
}

// prepare fills req from m, compressing a data payload when asked to and when it pays.
func (w *Writer) prepare(req *request, m Message) {
	req.control = m.Opcode.IsControl()
	req.h = Header{Opcode: m.Opcode, StreamID: DataStream, RequestID: m.RequestID}
	req.payload = m.Payload
	if req.control {
		req.h.StreamID = ControlStream
		return
	}
	want := m.Flags&FlagCompressed != 0 || (w.cfg.compressMin > 0 && len(m.Payload) >= w.cfg.compressMin)
	if !want {
		return
	}
	z, ok := compress(req.zbuf, m.Payload, w.cfg.level)
	req.zbuf = z
	if ok {
		req.payload, req.h.Flags = z, FlagCompressed
	}
}

// await waits for req's result; see Send for the cancellation rule.
func (w *Writer) await(ctx context.Context, req *request) error {
	select {
	case err := <-req.done:
		putRequest(req)
		return err
	case <-ctx.Done():
		if req.cancel() {
			return ctx.Err() // the writer now owns req and will recycle it unwritten
		}
		err := <-req.done
		putRequest(req)
		return err
	}
}

// countingWriter counts the bytes that reached the destination, which is how the writer knows
// a message buffered earlier has left without flushing per message.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
