package wire

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/qim-dev/qim/contract"
)

var benchSizes = []int{64, 1 << 10, 64 << 10}

func benchName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func BenchmarkEncode(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(benchName(size), func(b *testing.B) {
			m := Message{Opcode: contract.OpPushEvents, StreamID: DataStream, RequestID: 1, Payload: make([]byte, size)}
			buf := make([]byte, 0, size+2*HeaderSize)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				var err error
				if buf, err = AppendMessage(buf[:0], m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// loopReader replays one encoded stream forever, so the decode benchmark measures the Reader
// rather than rebuilding input.
type loopReader struct {
	b   []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.b[l.off:])
	l.off = (l.off + n) % len(l.b)
	return n, nil
}

func BenchmarkDecode(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(benchName(size), func(b *testing.B) {
			m := Message{Opcode: contract.OpPushEvents, StreamID: DataStream, RequestID: 1, Payload: make([]byte, size)}
			r := NewReader(&loopReader{b: mustMessage(b, nil, m)})
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := r.ReadMessage(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriterChunked4MiB is the gateway's worst downlink case: a maximal MAILBOX_BATCH
// through the queue, chunked into 64 frames.
func BenchmarkWriterChunked4MiB(b *testing.B) {
	w := NewWriter(io.Discard)
	defer w.Close()
	m := Message{Opcode: contract.OpMailboxBatch, RequestID: 1, Payload: make([]byte, MaxPayload)}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(MaxPayload)
	for b.Loop() {
		if err := w.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}
