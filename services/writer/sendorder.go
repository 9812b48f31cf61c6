package writer

// sendOrder keeps a gateway stream's sends in the order they were read while the moderation hook
// is asked about them concurrently: each send's hook call runs on its own goroutine, and one
// goroutine per stream runs the continuations (commit or refusal) strictly in read order. Two
// messages a client sends back to back on one connection therefore get conversation_seqs in
// that order even when the hook answers the second first.
//
// Rejected: asking the hook on the read loop (one call at a time per connection: the hook's
// latency would cap a connection's send rate at 1/latency) and committing in answer order (a
// fast second answer would overtake the first message).
type sendOrder struct {
	queue chan chan func()
	done  chan struct{}
}

// newSendOrder holds up to limit sends (the stream's in-flight permits bound what is queued).
func newSendOrder(limit int) *sendOrder {
	o := &sendOrder{queue: make(chan chan func(), limit), done: make(chan struct{})}
	go o.run()
	return o
}

func (o *sendOrder) run() {
	defer close(o.done)
	for next := range o.queue {
		(<-next)()
	}
}

// add queues a send whose continuation prepare computes (on a goroutine of its own).
func (o *sendOrder) add(prepare func() func()) {
	next := make(chan func(), 1)
	o.queue <- next // never blocks: a queued send holds one of the stream's limit permits
	go func() { next <- prepare() }()
}

// close ends the queue once the read loop has stopped; queued sends still run. Nil-safe.
func (o *sendOrder) close() {
	if o != nil {
		close(o.queue)
	}
}
