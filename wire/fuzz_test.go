package wire

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/qim-dev/qim/contract"
)

// FuzzReader feeds arbitrary bytes to the Reader. Properties: it never panics; it never returns
// a payload above MaxPayload; its errors are sticky; and every message it does return survives
// a re-encode and decode unchanged, so the encoder and decoder agree on everything the decoder
// accepts.
func FuzzReader(f *testing.F) {
	seed := func(msgs ...Message) []byte {
		var b []byte
		for _, m := range msgs {
			b = mustMessage(f, b, m)
		}
		return b
	}
	// Seeds stay small (chunks here are a few bytes; the Reader accepts any chunk size) because
	// the fuzzer minimizes every interesting input, and minimizing a 64 KiB-plus input stalls
	// a short run for seconds.
	text := bytes.Repeat([]byte("mailbox entry "), 40)
	chunked := bytes.Join([][]byte{
		mustFrame(f, nil, Header{Flags: FlagMore, Opcode: contract.OpMailboxBatch, StreamID: DataStream, RequestID: 5}, []byte("part one,")),
		mustFrame(f, nil, Header{Flags: FlagMore, Opcode: contract.OpMailboxBatch, StreamID: DataStream, RequestID: 5}, []byte("part two,")),
		mustFrame(f, nil, Header{Opcode: contract.OpMailboxBatch, StreamID: DataStream, RequestID: 5}, []byte("end")),
	}, nil)
	// A PONG spliced between the chunks, as the Writer produces it.
	pong := seed(Message{Opcode: contract.OpPong, StreamID: ControlStream, Payload: []byte("pong")})
	first := HeaderSize + len("part one,")
	interleaved := bytes.Join([][]byte{chunked[:first], pong, chunked[first:]}, nil)
	z, _ := compress(nil, text, zstd.SpeedFastest)
	compressedChunks := bytes.Join([][]byte{
		mustFrame(f, nil, Header{Flags: FlagCompressed | FlagMore, Opcode: contract.OpHistoryBatch, StreamID: 3}, z[:len(z)/2]),
		mustFrame(f, nil, Header{Flags: FlagCompressed, Opcode: contract.OpHistoryBatch, StreamID: 3}, z[len(z)/2:]),
	}, nil)

	f.Add([]byte{})
	f.Add(seed(Message{Opcode: contract.OpPing}))
	f.Add(seed(Message{Opcode: contract.OpSend, RequestID: 42, Payload: []byte("hello")},
		Message{Opcode: contract.OpSendAck, RequestID: 42, Payload: []byte{1, 2, 3}}))
	f.Add(seed(Message{Opcode: contract.OpHistoryBatch, Flags: FlagCompressed, Payload: text}))
	f.Add(chunked)
	f.Add(interleaved)
	f.Add(compressedChunks)
	f.Add(AppendHeader(nil, Header{Flags: FlagMore, Opcode: contract.OpMailboxBatch, Length: 3}))
	f.Add(AppendHeader(nil, Header{Length: MaxPayload + 1}))
	f.Add(append(AppendHeader(nil, Header{Flags: FlagCompressed, Length: 4}), "junk"...))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("QM\x01\x00garbage garbage garbage"))

	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for {
			m, err := r.ReadMessage()
			if err != nil {
				if _, again := r.ReadMessage(); again != err {
					t.Fatalf("error not sticky: %v then %v", err, again)
				}
				return
			}
			if len(m.Payload) > MaxPayload {
				t.Fatalf("payload of %d bytes exceeds MaxPayload", len(m.Payload))
			}
			if m.Flags&^FlagCompressed != 0 {
				t.Fatalf("decoded message carries wire-only flags %#x", m.Flags)
			}
			enc, err := AppendMessage(nil, m)
			if err != nil {
				t.Fatalf("re-encoding a decoded message: %v", err)
			}
			back, err := NewReader(bytes.NewReader(enc)).ReadMessage()
			if err != nil || !equalMessage(back, m) {
				t.Fatalf("re-encoded message does not round-trip: %v", err)
			}
		}
	})
}
