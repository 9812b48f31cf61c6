package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// TestWriterPongBetweenChunks is the acceptance test for control-frame priority: a PONG queued
// while a 4 MiB MAILBOX_BATCH is being written leaves between two of its chunks, not after it.
// The sink blocks inside the writer's first write, which is inside the first chunk, so the test
// knows the writer is mid-message when it queues the PONG; no timing is involved.
func TestWriterPongBetweenChunks(t *testing.T) {
	ctx := context.Background()
	sink := newGatedSink(nil)
	w := NewWriter(sink)
	big := randomPayload(rand.New(rand.NewPCG(5, 6)), MaxPayload)

	batch, err := w.submit(ctx, Message{Opcode: contract.OpMailboxBatch, RequestID: 7, Payload: big})
	if err != nil {
		t.Fatal(err)
	}
	<-sink.entered // the writer is blocked mid-chunk
	pong, err := w.submit(ctx, Message{Opcode: contract.OpPong, RequestID: 8, Payload: []byte("pong")})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.QueueLen(); n != 1 {
		t.Fatalf("QueueLen = %d while the batch is being written, want 1 (the PONG)", n)
	}
	close(sink.gate)
	if err := w.await(ctx, pong); err != nil {
		t.Fatal(err)
	}
	if err := w.await(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	out := sink.bytes()
	frames := splitFrames(t, out)
	pongAt, before, after := -1, 0, 0
	for i, f := range frames {
		switch {
		case f.Opcode == contract.OpPong:
			pongAt = i
		case pongAt < 0:
			before++
		default:
			after++
		}
	}
	if pongAt < 0 || before == 0 || after == 0 {
		t.Fatalf("PONG at frame %d with %d batch chunks before and %d after; want it between chunks", pongAt, before, after)
	}
	if p := frames[pongAt]; p.StreamID != ControlStream || p.Flags != 0 || frames[pongAt-1].Flags&FlagMore == 0 {
		t.Fatalf("PONG frame %+v after %+v", p.Header, frames[pongAt-1].Header)
	}
	t.Logf("PONG is frame %d of %d: after batch chunk %d of %d", pongAt, len(frames), before, before+after)

	msgs, err := readAll(out)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("decoded %d messages, %v", len(msgs), err)
	}
	if msgs[0].Opcode != contract.OpPong || msgs[1].Opcode != contract.OpMailboxBatch ||
		msgs[1].RequestID != 7 || !bytes.Equal(msgs[1].Payload, big) {
		t.Fatalf("decoded %v then %v (%d bytes)", msgs[0].Opcode, msgs[1].Opcode, len(msgs[1].Payload))
	}
}

// TestWriterConcurrentSenders: many goroutines share one Writer over a pipe; every message
// arrives intact, and each sender's data messages keep their order.
func TestWriterConcurrentSenders(t *testing.T) {
	const senders, perSender = 8, 40
	pr, pw := io.Pipe()
	w := NewWriter(pw, WithCompression(1024), WithQueueDepth(4))

	type result struct {
		msgs []Message
		err  error
	}
	readDone := make(chan result, 1)
	go func() { // owned: the test waits on readDone
		var res result
		r := NewReader(pr)
		for {
			m, err := r.ReadMessage()
			if err != nil {
				if err != io.EOF {
					res.err = err
				}
				readDone <- res
				return
			}
			res.msgs = append(res.msgs, m)
		}
	}()

	payloadOf := func(s, i int) []byte {
		rng := rand.New(rand.NewPCG(uint64(s), uint64(i)))
		return randomPayload(rng, []int{0, 10, 3000, ChunkSize + 17, 300 << 10}[rng.IntN(5)])
	}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				op := contract.OpPushEvents
				if i%7 == 3 {
					op = contract.OpPing
				}
				m := Message{Opcode: op, RequestID: uint32(s<<16 | i), Payload: payloadOf(s, i)}
				if err := w.Send(context.Background(), m); err != nil {
					errs <- fmt.Errorf("sender %d message %d: %w", s, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	res := <-readDone
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.msgs) != senders*perSender {
		t.Fatalf("received %d messages, want %d", len(res.msgs), senders*perSender)
	}
	next := make([]int, senders)
	for _, m := range res.msgs {
		s, i := int(m.RequestID>>16), int(m.RequestID&0xFFFF)
		if i != next[s] {
			t.Fatalf("sender %d: message %d arrived when %d was expected", s, i, next[s])
		}
		next[s]++
		if !bytes.Equal(m.Payload, payloadOf(s, i)) {
			t.Fatalf("sender %d message %d: payload differs", s, i)
		}
		if want := map[bool]uint16{true: ControlStream, false: DataStream}[m.Opcode.IsControl()]; m.StreamID != want {
			t.Fatalf("%v on stream %d", m.Opcode, m.StreamID)
		}
	}
}
