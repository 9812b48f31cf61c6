package wire

import "fmt"

// This file is the Writer's goroutine. Everything here runs on it alone, which is why the bufio
// buffer, the byte counter and the in-flight list need no locks.

func (w *Writer) run() {
	defer close(w.done)
	if err := w.pump(); err != nil {
		w.failAll(err)
	}
}

// pump writes messages until the Writer is closed and drained, or a write fails.
func (w *Writer) pump() error {
	for {
		req, err := w.next()
		if err != nil || req == nil {
			return err
		}
		if err := w.writeMessage(req); err != nil {
			w.complete(req, err)
			return err
		}
	}
}

// next returns the next claimed request, control before data. When both queues are empty it
// flushes — the only place the writer flushes on its own, so a burst of small messages costs one
// write, not one per frame — and then blocks. It returns nil once the Writer is closed and the
// queue is drained.
func (w *Writer) next() (*request, error) {
	for {
		if req := w.poll(true); req != nil {
			return req, nil
		}
		if err := w.flush(); err != nil {
			return nil, err
		}
		if w.sealed {
			return nil, nil
		}
		var req *request
		select {
		case req = <-w.ctrl:
		case req = <-w.data:
		case <-w.stop:
			w.seal()
			continue
		}
		if req.claim() {
			return req, nil
		}
		putRequest(req)
	}
}

// poll takes the next queued request without blocking: control first, then data if withData.
// Requests whose sender gave up are recycled here and never written.
func (w *Writer) poll(withData bool) *request {
	for {
		var req *request
		select {
		case req = <-w.ctrl:
		default:
			if !withData {
				return nil
			}
			select {
			case req = <-w.data:
			default:
				return nil
			}
		}
		if req.claim() {
			return req
		}
		putRequest(req)
	}
}

// seal waits until no sender can still enqueue. Senders hold gate's read side from their stop
// check to their enqueue; once the writer has held the write side after stop closed, any later
// sender sees stop, so an empty queue stays empty.
func (w *Writer) seal() {
	w.gate.Lock()
	w.sealed = true
	w.gate.Unlock()
}

// writeMessage frames req into the buffer, in ChunkSize pieces, letting queued control messages
// through between the chunks of a data message. A control message is itself never interrupted,
// so the nesting is one level deep.
func (w *Writer) writeMessage(req *request) error {
	h, p := req.h, req.payload
	for {
		n := min(len(p), ChunkSize)
		h.Length, h.Flags = uint32(n), req.h.Flags
		if n < len(p) {
			h.Flags |= FlagMore
		}
		if err := w.writeFrame(h, p[:n]); err != nil {
			return err
		}
		if p = p[n:]; len(p) == 0 {
			break
		}
		if !req.control {
			if err := w.writeControls(); err != nil {
				return err
			}
		}
	}
	req.end = w.out.n + int64(w.bw.Buffered())
	w.inflight = append(w.inflight, req)
	w.settle()
	return nil
}

// writeControls writes the control messages queued right now. It takes at most one queue's worth
// so that a peer provoking control frames cannot starve the data message being chunked.
func (w *Writer) writeControls() error {
	for range cap(w.ctrl) {
		c := w.poll(false)
		if c == nil {
			return nil
		}
		if err := w.writeMessage(c); err != nil {
			w.complete(c, err)
			return err
		}
	}
	return nil
}

func (w *Writer) writeFrame(h Header, payload []byte) error {
	putHeader(&w.hdr, h)
	if _, err := w.bw.Write(w.hdr[:]); err != nil {
		return writeError(err)
	}
	if _, err := w.bw.Write(payload); err != nil {
		return writeError(err)
	}
	w.settle()
	return nil
}

// writeError marks an error as the connection's death so every failed sender sees the same
// wrapped cause.
func writeError(err error) error { return fmt.Errorf("wire: write: %w", err) }

func (w *Writer) flush() error {
	if w.bw.Buffered() > 0 {
		if err := w.bw.Flush(); err != nil {
			return writeError(err)
		}
	}
	w.settle()
	return nil
}

// settle delivers success to every in-flight message whose last byte has reached the
// io.Writer. Messages are buffered in order, so the settled ones are a prefix.
func (w *Writer) settle() {
	i := 0
	for i < len(w.inflight) && w.inflight[i].end <= w.out.n {
		w.complete(w.inflight[i], nil)
		i++
	}
	if i > 0 {
		n := copy(w.inflight, w.inflight[i:])
		clear(w.inflight[n:])
		w.inflight = w.inflight[:n]
	}
}

// complete hands req its result. After this the sender owns req again; the writer must not
// touch it.
func (w *Writer) complete(req *request, err error) { req.done <- err }

// failAll runs once the connection is dead: it stops new sends, fails what was buffered but had
// not left, then everything still queued. A message whose bytes did leave before the failure
// still gets success: the peer may have received it, and reporting an error would invite a
// duplicate that idempotency keys would then have to absorb.
func (w *Writer) failAll(err error) {
	w.failErr = err
	w.halt(err)
	w.settle()
	for _, req := range w.inflight {
		w.complete(req, err)
	}
	clear(w.inflight)
	w.inflight = w.inflight[:0]
	if !w.sealed {
		w.seal()
	}
	for req := w.poll(true); req != nil; req = w.poll(true) {
		w.complete(req, err)
	}
}
