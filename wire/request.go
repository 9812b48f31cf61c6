package wire

import (
	"sync"
	"sync/atomic"
)

// Request states. A queued request is claimed exactly once, by compare-and-swap: either by the
// writer goroutine (queued → writing), which then owes the sender exactly one result on done,
// or by the sender giving up on its context (queued → cancelled), after which the writer never
// touches the payload and only recycles the request. This is what lets a cancelled Send return
// while its request still sits in the channel, without the writer reading a buffer the caller
// has since reused.
const (
	reqQueued uint32 = iota
	reqWriting
	reqCancelled
)

// request is one Send in flight. Requests are pooled: a steady stream of sends allocates
// neither the request nor its completion channel.
type request struct {
	state   atomic.Uint32
	control bool
	h       Header     // Flags (FlagCompressed or 0), Opcode, StreamID, RequestID; Length per chunk
	payload []byte     // the bytes framed on the wire: the caller's payload or zbuf
	zbuf    []byte     // compression output, reused across the request's lives
	end     int64      // output offset just past the message's last byte; set when buffered
	done    chan error // capacity 1: the writer never blocks delivering a result
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan error, 1)} }}

func getRequest() *request { return requestPool.Get().(*request) }

// putRequest recycles r. Only the side that owns r after the claim may call it: the sender after
// receiving its result, or the writer for a cancelled request.
func putRequest(r *request) {
	r.payload = nil // do not keep the caller's payload alive from the pool
	if cap(r.zbuf) > maxRetainedSpare {
		r.zbuf = nil
	}
	r.h = Header{}
	r.end = 0
	r.state.Store(reqQueued)
	requestPool.Put(r)
}

func (r *request) claim() bool  { return r.state.CompareAndSwap(reqQueued, reqWriting) }
func (r *request) cancel() bool { return r.state.CompareAndSwap(reqQueued, reqCancelled) }
