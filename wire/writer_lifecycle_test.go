package wire

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func msg(op contract.Opcode, req uint32, payload string) Message {
	return Message{Opcode: op, RequestID: req, Payload: []byte(payload)}
}

// TestWriterCloseDrains: Close refuses new sends at once but writes and flushes everything
// queued before it.
func TestWriterCloseDrains(t *testing.T) {
	ctx := context.Background()
	sink := newGatedSink(nil)
	w := NewWriter(sink)
	var reqs []*request
	for i := range 3 {
		r, err := w.submit(ctx, msg(contract.OpSendAck, uint32(i), "ack"))
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
		if i == 0 {
			<-sink.entered // the writer is flushing the first message; the rest queue behind it
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }() // owned: the test receives from closed
	<-w.stop
	if err := w.Send(ctx, msg(contract.OpSendAck, 99, "late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	close(sink.gate)
	for i, r := range reqs {
		if err := w.await(ctx, r); err != nil {
			t.Fatalf("queued message %d: %v", i, err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	msgs, err := readAll(sink.bytes())
	if err != nil || len(msgs) != 3 {
		t.Fatalf("%d messages written, %v; want the 3 queued before Close", len(msgs), err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestWriterWriteErrorFailsQueued: once a write fails the connection is dead: the message being
// written, everything queued, and every later Send fail with the write error.
func TestWriterWriteErrorFailsQueued(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("connection reset")
	sink := newGatedSink(boom)
	w := NewWriter(sink)
	first, err := w.submit(ctx, msg(contract.OpMailboxBatch, 1, "batch"))
	if err != nil {
		t.Fatal(err)
	}
	<-sink.entered
	var queued []*request
	for i, op := range []contract.Opcode{contract.OpPushEvents, contract.OpPong} {
		r, err := w.submit(ctx, msg(op, uint32(i+2), "x"))
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, r)
	}
	close(sink.gate)
	for i, r := range append([]*request{first}, queued...) {
		if err := w.await(ctx, r); !errors.Is(err, boom) {
			t.Fatalf("request %d: %v, want the write error", i, err)
		}
	}
	if err := w.Send(ctx, msg(contract.OpPing, 9, "")); !errors.Is(err, boom) {
		t.Fatalf("Send after failure: %v", err)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close after failure: %v", err)
	}
}

// TestWriterCancel: a send whose context ends while it is queued returns the context error and
// is never written; one whose context ends while the queue is full never enters it.
func TestWriterCancel(t *testing.T) {
	ctx := context.Background()
	sink := newGatedSink(nil)
	w := NewWriter(sink, WithQueueDepth(1))
	first, err := w.submit(ctx, msg(contract.OpPushEvents, 1, "first"))
	if err != nil {
		t.Fatal(err)
	}
	<-sink.entered
	cctx, cancel := context.WithCancel(ctx)
	queued, err := w.submit(cctx, msg(contract.OpPushEvents, 2, "cancelled"))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The data queue (depth 1) is full, so this send can only end through its context.
	if err := w.Send(cctx, msg(contract.OpPushEvents, 3, "never queued")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send on a full queue with a cancelled context: %v", err)
	}
	if err := w.await(cctx, queued); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled queued send: %v", err)
	}
	close(sink.gate)
	if err := w.await(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	msgs, err := readAll(sink.bytes())
	if err != nil || len(msgs) != 1 || msgs[0].RequestID != 1 {
		t.Fatalf("written: %+v, %v; want only the first message", msgs, err)
	}
}

func TestWriterValidates(t *testing.T) {
	w := NewWriter(io.Discard)
	defer w.Close()
	ctx := context.Background()
	if err := w.Send(ctx, Message{Opcode: contract.OpSend, Flags: FlagMore}); !errors.Is(err, ErrBadFlags) {
		t.Errorf("FlagMore: %v", err)
	}
	if err := w.Send(ctx, Message{Opcode: contract.OpSend, Payload: make([]byte, MaxPayload+1)}); !errors.Is(err, ErrOversize) {
		t.Errorf("oversize: %v", err)
	}
	if err := w.Send(ctx, Message{Opcode: contract.OpSend, Payload: make([]byte, MaxPayload)}); err != nil {
		t.Errorf("maximal message: %v", err)
	}
}
