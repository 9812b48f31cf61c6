package gateway

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/wire"
)

// The benchmarks measure the gateway's own cost on the SEND path — frame in, cmid check,
// stream to a writer, outcome back, SEND_ACK out — against an in-process fake writer that
// answers at once, over loopback TCP. They are the floor the real writer's commit adds to.

// BenchmarkSendAckSequential: one SEND at a time; ns/op is the round trip.
func BenchmarkSendAckSequential(b *testing.B) {
	h := startGateway(b, harnessOpts{})
	c := h.login(newIdentity(b, "bench"))
	payload := sendPayload(b, 5, cmid(b))
	b.ResetTimer()
	for range b.N {
		c.writeBytes(contract.OpSend, c.nextID(), payload)
		if m := c.read(5 * time.Second); m.Opcode != contract.OpSendAck {
			b.Fatalf("got %v", m.Opcode)
		}
	}
}

// BenchmarkSendAckPipelined: SENDs written back to back by one client (the gateway's in-flight
// window does the pacing); ns/op is the inverse of one connection's throughput.
func BenchmarkSendAckPipelined(b *testing.B) {
	h := startGateway(b, harnessOpts{})
	c := h.login(newIdentity(b, "bench"))
	payload := sendPayload(b, 5, cmid(b))
	const batch = 64
	frames := make([]byte, 0, batch*(wire.HeaderSize+len(payload)))
	for range batch {
		frames, _ = wire.AppendMessage(frames, wire.Message{Opcode: contract.OpSend, StreamID: wire.DataStream, RequestID: 1, Payload: payload})
	}
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for got := 0; got < b.N; got++ {
			if m, err := c.tryRead(10 * time.Second); err != nil || m.Opcode != contract.OpSendAck {
				b.Errorf("ack %d: %v %v", got, m.Opcode, err)
				return
			}
		}
	}()
	for sent := 0; sent < b.N; sent += batch {
		n := min(batch, b.N-sent)
		if _, err := c.nc.Write(frames[:n*(len(frames)/batch)]); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}
