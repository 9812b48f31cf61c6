package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/qim-dev/qim/contract"
)

// chunks returns n MORE-flagged chunk frames of ChunkSize on stream s, then the final frame
// header only when lastLen >= 0 (payload included).
func chunks(t testing.TB, s uint16, n int, lastLen int) []byte {
	var b []byte
	payload := make([]byte, ChunkSize)
	for range n {
		b = mustFrame(t, b, Header{Flags: FlagMore, Opcode: contract.OpMailboxBatch, StreamID: s}, payload)
	}
	if lastLen >= 0 {
		b = mustFrame(t, b, Header{Opcode: contract.OpMailboxBatch, StreamID: s}, make([]byte, lastLen))
	}
	return b
}

func TestReaderRejects(t *testing.T) {
	ping := mustFrame(t, nil, Header{Opcode: contract.OpPing, StreamID: ControlStream}, []byte("p"))
	corrupt := func(i int, x byte) []byte { b := bytes.Clone(ping); b[i] ^= x; return b }
	badFlags := func(f Flags) []byte {
		return append(AppendHeader(nil, Header{Flags: f, Opcode: contract.OpPing, Length: 1}), 'p')
	}
	var zipBomb, zipBombNoSize []byte
	zipBomb, _ = compress(nil, make([]byte, MaxPayload+1), zstd.SpeedFastest)
	zipBombNoSize = streamCompress(t, make([]byte, MaxPayload+1), 1<<20)
	hugeWindow := streamCompress(t, make([]byte, 200<<10), 2*MaxPayload)
	// The 65th chunk crosses the limit; its payload is absent, so the error must come from the
	// header alone, before any read.
	oversizeReassembled := append(chunks(t, 1, MaxPayload/ChunkSize, -1),
		AppendHeader(nil, Header{Opcode: contract.OpMailboxBatch, StreamID: 1, Length: 1})...)
	tests := []struct {
		name string
		in   []byte
		opts []ReaderOption
		want error
	}{
		{"bad magic", corrupt(0, 0x20), nil, ErrBadMagic},
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), nil, ErrBadMagic},
		{"bad version", corrupt(2, 0x03), nil, ErrBadVersion},
		{"bad crc", corrupt(17, 0x01), nil, ErrBadCRC},
		{"corrupt length", corrupt(13, 0x01), nil, ErrBadCRC},
		{"need ack", badFlags(FlagNeedAck), nil, ErrBadFlags},
		{"reserved flag", badFlags(0x10), nil, ErrBadFlags},
		{"oversize frame", AppendHeader(nil, Header{Opcode: contract.OpSend, Length: MaxPayload + 1}), nil, ErrOversize},
		{"oversize first chunk", AppendHeader(nil, Header{Flags: FlagMore, Length: MaxPayload + 1}), nil, ErrOversize},
		{"oversize under option", mustFrame(t, nil, Header{}, make([]byte, 101)), []ReaderOption{WithMaxMessageSize(100)}, ErrOversize},
		{"oversize reassembled", oversizeReassembled, nil, ErrOversize},
		{"truncated header", ping[:7], nil, io.ErrUnexpectedEOF},
		{"truncated payload", append(AppendHeader(nil, Header{Length: 10}), "12345"...), nil, io.ErrUnexpectedEOF},
		{"eof inside chunked message", chunks(t, 1, 2, -1), nil, io.ErrUnexpectedEOF},
		{"continuation changes opcode", append(chunks(t, 1, 1, -1),
			mustFrame(t, nil, Header{Opcode: contract.OpHistoryBatch, StreamID: 1}, nil)...), nil, ErrProtocol},
		{"continuation changes request", append(chunks(t, 1, 1, -1),
			mustFrame(t, nil, Header{Opcode: contract.OpMailboxBatch, StreamID: 1, RequestID: 9}, nil)...), nil, ErrProtocol},
		{"continuation changes compression", append(chunks(t, 1, 1, -1),
			mustFrame(t, nil, Header{Flags: FlagCompressed, Opcode: contract.OpMailboxBatch, StreamID: 1}, nil)...), nil, ErrProtocol},
		{"too many streams", func() []byte {
			var b []byte
			for s := range 3 {
				b = mustFrame(t, b, Header{Flags: FlagMore, StreamID: uint16(s)}, []byte("x"))
			}
			return b
		}(), []ReaderOption{WithMaxStreams(2)}, ErrProtocol},
		{"bad zstd", mustFrame(t, nil, Header{Flags: FlagCompressed}, []byte("not zstd at all")), nil, ErrCompression},
		{"zip bomb", mustFrame(t, nil, Header{Flags: FlagCompressed}, zipBomb), nil, ErrOversize},
		{"zip bomb without size", mustFrame(t, nil, Header{Flags: FlagCompressed}, zipBombNoSize), nil, ErrOversize},
		{"zstd window above limit", mustFrame(t, nil, Header{Flags: FlagCompressed}, hugeWindow), nil, ErrCompression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.in), tt.opts...)
			var err error
			for err == nil {
				_, err = r.ReadMessage()
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if _, again := r.ReadMessage(); again != err {
				t.Fatalf("error not sticky: first %v, then %v", err, again)
			}
		})
	}
}

func TestOversizeErrorCarriesSizes(t *testing.T) {
	in := append(chunks(t, 1, MaxPayload/ChunkSize, -1),
		AppendHeader(nil, Header{Opcode: contract.OpMailboxBatch, StreamID: 1, Length: 7})...)
	_, err := readAll(in)
	var oe *OversizeError
	if !errors.As(err, &oe) || oe.Length != MaxPayload+7 || oe.Limit != MaxPayload || oe.Decompressed {
		t.Fatalf("err = %#v", err)
	}
	z, _ := compress(nil, make([]byte, 5000), zstd.SpeedFastest)
	_, err = readAll(mustFrame(t, nil, Header{Flags: FlagCompressed}, z), WithMaxMessageSize(4096))
	if !errors.As(err, &oe) || oe.Length != 5000 || oe.Limit != 4096 || !oe.Decompressed {
		t.Fatalf("decompressed: err = %#v", err)
	}
}

// TestReaderDoesNotTrustLength: a declared length is never allocated up front. An oversize one
// costs nothing; a legal but unbacked one costs at most one growth step.
func TestReaderDoesNotTrustLength(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		budget uint64
		want   error
	}{
		{"oversize", AppendHeader(nil, Header{Length: 0xFFFFFFFF}), 4 << 10, ErrOversize},
		{"max but unbacked", append(AppendHeader(nil, Header{Length: MaxPayload}), "tiny"...), 2 * growStep, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// TotalAlloc counts the whole process, so another goroutine's allocation (the
			// runtime's, a parallel test's) can land inside the window on a busy machine. Such
			// noise only ever adds: the least of a few readings is the reader's own cost.
			got := uint64(math.MaxUint64)
			for range 5 {
				r := NewReader(bytes.NewReader(tt.in))
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := r.ReadMessage()
				runtime.ReadMemStats(&after)
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				got = min(got, after.TotalAlloc-before.TotalAlloc)
			}
			if got > tt.budget {
				t.Fatalf("allocated %d bytes (least of 5 readings), budget %d", got, tt.budget)
			}
		})
	}
}

func TestReaderEOF(t *testing.T) {
	if _, err := NewReader(bytes.NewReader(nil)).ReadMessage(); err != io.EOF {
		t.Fatalf("empty input: %v, want io.EOF", err)
	}
	one := mustFrame(t, nil, Header{Opcode: contract.OpPing}, nil)
	r := NewReader(bytes.NewReader(one))
	if m, err := r.ReadMessage(); err != nil || m.Opcode != contract.OpPing || len(m.Payload) != 0 {
		t.Fatalf("got %+v, %v", m, err)
	}
	if _, err := r.ReadMessage(); err != io.EOF {
		t.Fatalf("after last message: %v, want io.EOF", err)
	}
}

// TestReaderControlBetweenChunks: a frame on another stream completes first and is returned
// before the message whose chunks surround it.
func TestReaderControlBetweenChunks(t *testing.T) {
	b := chunks(t, DataStream, 2, -1)
	b = mustFrame(t, b, Header{Opcode: contract.OpPong, StreamID: ControlStream, RequestID: 3}, []byte("pong"))
	b = mustFrame(t, b, Header{Opcode: contract.OpMailboxBatch, StreamID: DataStream}, []byte("end"))
	msgs, err := readAll(b)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("got %d messages, %v", len(msgs), err)
	}
	if msgs[0].Opcode != contract.OpPong || string(msgs[0].Payload) != "pong" || msgs[0].RequestID != 3 {
		t.Errorf("first message %+v", msgs[0])
	}
	if msgs[1].Opcode != contract.OpMailboxBatch || len(msgs[1].Payload) != 2*ChunkSize+3 {
		t.Errorf("second message %v, %d bytes", msgs[1].Opcode, len(msgs[1].Payload))
	}
}

// TestReaderPayloadIsFresh: payloads stay valid after later reads and do not alias each other,
// which is what lets the gateway hand them to other goroutines without copying.
func TestReaderPayloadIsFresh(t *testing.T) {
	var b []byte
	b = mustMessage(t, b, Message{Opcode: contract.OpSend, Payload: []byte("first")})
	b = mustMessage(t, b, Message{Opcode: contract.OpSend, Flags: FlagCompressed, Payload: bytes.Repeat([]byte("z"), 4096)})
	b = mustMessage(t, b, Message{Opcode: contract.OpSend, Payload: []byte("third")})
	msgs, err := readAll(b)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	if string(msgs[0].Payload) != "first" || string(msgs[2].Payload) != "third" ||
		!bytes.Equal(msgs[1].Payload, bytes.Repeat([]byte("z"), 4096)) || msgs[1].Flags != FlagCompressed {
		t.Fatalf("payloads changed under later reads: %q %d %q", msgs[0].Payload, len(msgs[1].Payload), msgs[2].Payload)
	}
}

// streamCompress produces a zstd stream that does not declare its content size, the case where
// only zstd's own output limit stands between a bomb and memory.
func streamCompress(t testing.TB, src []byte, window int) []byte {
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(window))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var zh zstd.Header
	if err := zh.Decode(buf.Bytes()); err != nil || zh.HasFCS {
		t.Fatalf("stream frame declares its size (%v, %v); the test needs one that does not", zh.HasFCS, err)
	}
	return buf.Bytes()
}
