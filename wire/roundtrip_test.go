package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// randomMessage draws sizes that hit the codec's edges: empty, tiny, the chunk boundary on both
// sides, multi-chunk, and the maximum.
func randomMessage(rng *rand.Rand, ops []contract.OpcodeInfo, allowMax bool) Message {
	sizes := []int{0, 1, rng.IntN(200), rng.IntN(4 << 10), ChunkSize - 1, ChunkSize, ChunkSize + 1,
		ChunkSize*3 + rng.IntN(ChunkSize)}
	if allowMax {
		sizes = append(sizes, MaxPayload)
	}
	m := Message{
		Opcode:    ops[rng.IntN(len(ops))].Op,
		StreamID:  uint16(rng.IntN(4)),
		RequestID: rng.Uint32(),
		Payload:   randomPayload(rng, sizes[rng.IntN(len(sizes))]),
	}
	if rng.IntN(2) == 0 {
		m.Flags = FlagCompressed
	}
	return m
}

// TestRoundTripSequential: messages encoded back to back decode to themselves, in order, and a
// message asked to be compressed arrives compressed exactly when compression made it smaller.
func TestRoundTripSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := contract.Opcodes()
	var want []Message
	var b []byte
	for i := range 60 {
		m := randomMessage(rng, ops, i%20 == 0) // a few maximal messages, chunked and not
		want = append(want, m)
		b = mustMessage(t, b, m)
	}
	got, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d messages, want %d", len(got), len(want))
	}
	compressedSeen := 0
	for i := range want {
		if !equalMessage(got[i], want[i]) {
			t.Fatalf("message %d: got %v/%d bytes, want %v/%d bytes", i, got[i].Opcode, len(got[i].Payload),
				want[i].Opcode, len(want[i].Payload))
		}
		if got[i].Flags&^FlagCompressed != 0 || (got[i].Flags != 0 && want[i].Flags == 0) {
			t.Fatalf("message %d: flags %#x for requested %#x", i, got[i].Flags, want[i].Flags)
		}
		if got[i].Flags != 0 {
			compressedSeen++
		}
	}
	if compressedSeen == 0 {
		t.Fatal("no message travelled compressed; the property did not exercise zstd")
	}
}

// TestRoundTripInterleavedStreams: chunks of messages on different streams, shuffled across
// streams but ordered within each, reassemble to the same messages in the same per-stream order.
func TestRoundTripInterleavedStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ops := contract.Opcodes()
	const streams = 5
	var frames [streams][][]byte // per stream, its frames in order
	var want [streams][]Message
	for range 40 {
		m := randomMessage(rng, ops, false)
		m.StreamID = uint16(rng.IntN(streams))
		want[m.StreamID] = append(want[m.StreamID], m)
		enc := mustMessage(t, nil, m)
		for _, f := range splitFrames(t, enc) {
			frames[m.StreamID] = append(frames[m.StreamID], AppendHeader(nil, f.Header), f.payload)
		}
	}
	var b []byte
	for {
		var live []int
		for s := range frames {
			if len(frames[s]) > 0 {
				live = append(live, s)
			}
		}
		if len(live) == 0 {
			break
		}
		s := live[rng.IntN(len(live))]
		b = append(b, frames[s][0]...)
		b = append(b, frames[s][1]...)
		frames[s] = frames[s][2:]
	}
	got, err := readAll(b, WithMaxStreams(streams))
	if err != nil {
		t.Fatal(err)
	}
	var per [streams][]Message
	for _, m := range got {
		per[m.StreamID] = append(per[m.StreamID], m)
	}
	for s := range per {
		if len(per[s]) != len(want[s]) {
			t.Fatalf("stream %d: %d messages, want %d", s, len(per[s]), len(want[s]))
		}
		for i := range per[s] {
			if !equalMessage(per[s][i], want[s][i]) {
				t.Fatalf("stream %d message %d differs", s, i)
			}
		}
	}
}

func TestAppendMessageChunking(t *testing.T) {
	tests := []struct {
		size   int
		frames int
	}{
		{0, 1}, {1, 1}, {ChunkSize, 1}, {ChunkSize + 1, 2}, {3 * ChunkSize, 3}, {MaxPayload, MaxPayload / ChunkSize},
	}
	for _, tt := range tests {
		b := mustMessage(t, nil, Message{Opcode: contract.OpMailboxBatch, StreamID: 9, RequestID: 5, Payload: make([]byte, tt.size)})
		fs := splitFrames(t, b)
		if len(fs) != tt.frames {
			t.Fatalf("size %d: %d frames, want %d", tt.size, len(fs), tt.frames)
		}
		for i, f := range fs {
			more := i < len(fs)-1
			if (f.Flags&FlagMore != 0) != more || f.StreamID != 9 || f.RequestID != 5 || f.Length > ChunkSize {
				t.Fatalf("size %d frame %d: %+v", tt.size, i, f.Header)
			}
		}
	}
	if _, err := AppendMessage(nil, Message{Flags: FlagMore}); err != ErrBadFlags {
		t.Fatalf("FlagMore on a message: %v", err)
	}
	if _, err := AppendMessage(nil, Message{Payload: make([]byte, MaxPayload+1)}); err == nil {
		t.Fatal("oversize message encoded")
	}
}
