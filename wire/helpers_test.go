package wire

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

// rawFrame is one frame as it appeared on the wire, for tests that check frame order rather
// than reassembled messages.
type rawFrame struct {
	Header
	payload []byte
}

// splitFrames cuts a byte stream into frames without reassembling, failing on anything invalid.
func splitFrames(t testing.TB, b []byte) []rawFrame {
	t.Helper()
	var out []rawFrame
	for len(b) > 0 {
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		end := HeaderSize + int(h.Length)
		if end > len(b) {
			t.Fatalf("frame %d: truncated", len(out))
		}
		out = append(out, rawFrame{h, b[HeaderSize:end]})
		b = b[end:]
	}
	return out
}

// mustFrame is AppendFrame for inputs the test knows to be valid.
func mustFrame(t testing.TB, dst []byte, h Header, payload []byte) []byte {
	t.Helper()
	out, err := AppendFrame(dst, h, payload)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustMessage(t testing.TB, dst []byte, m Message) []byte {
	t.Helper()
	out, err := AppendMessage(dst, m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readAll decodes every message of b and the error that ended the stream.
func readAll(b []byte, opts ...ReaderOption) ([]Message, error) {
	r := NewReader(bytes.NewReader(b), opts...)
	var out []Message
	for {
		m, err := r.ReadMessage()
		if err != nil {
			if err == io.EOF { // clean end between messages; wrapped EOFs are truncations
				err = nil
			}
			return out, err
		}
		out = append(out, m)
	}
}

// randomPayload is either incompressible noise or repetitive text, so compression is exercised
// both where it pays and where the encoder must fall back to plain.
func randomPayload(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	if rng.IntN(2) == 0 {
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	const text = "qim mailbox batch entry; "
	for i := range p {
		p[i] = text[(i+rng.IntN(2))%len(text)]
	}
	return p
}

func equalMessage(a, b Message) bool {
	return a.Opcode == b.Opcode && a.StreamID == b.StreamID && a.RequestID == b.RequestID &&
		bytes.Equal(a.Payload, b.Payload)
}

// gatedSink is an io.Writer whose first Write announces itself on entered and then blocks until
// gate is closed, so a test can freeze the Writer mid-message without sleeping. After the gate
// it either records bytes or, when fail is set, fails every write.
type gatedSink struct {
	entered chan struct{}
	gate    chan struct{}
	fail    error
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func newGatedSink(fail error) *gatedSink {
	return &gatedSink{entered: make(chan struct{}), gate: make(chan struct{}), fail: fail}
}

func (s *gatedSink) Write(p []byte) (int, error) {
	s.once.Do(func() {
		close(s.entered)
		<-s.gate
	})
	if s.fail != nil {
		return 0, s.fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *gatedSink) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.buf.Bytes())
}
