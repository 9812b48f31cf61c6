package sdk

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/wire"
)

// session is one network connection: a wire.Writer for uplink frames and a reader goroutine
// that hands downlink frames to the connection goroutine.
//
// Invariants: the reader goroutine is owned by the session and close waits for it; the frames
// channel is bounded, so a connection goroutine busy committing a large batch stops the reader,
// and TCP back-pressure, not memory, absorbs the server's burst. Every socket write is bounded by
// Config.WriteTimeout, so a gateway that stops reading fails our writes instead of blocking the
// connection goroutine forever.
type session struct {
	conn     net.Conn
	w        *wire.Writer
	frames   chan wire.Message
	readDone chan error // capacity 1
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// frameQueue bounds the downlink frames decoded but not yet handled.
const frameQueue = 64

// dial opens a connection to the endpoint (TCP, or TLS 1.3 with ALPN qim/1 like the gateway).
func dial(ctx context.Context, cfg *Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	if cfg.Endpoint.Mode == contract.ModeTLS {
		host, _, _ := net.SplitHostPort(cfg.Endpoint.Address)
		sni := cfg.Endpoint.ServerName
		if sni == "" {
			sni = host
		}
		td := tls.Dialer{NetDialer: &d, Config: &tls.Config{ServerName: sni, MinVersion: tls.VersionTLS13,
			NextProtos: []string{"qim/1"}}}
		conn, err := td.DialContext(ctx, "tcp", cfg.Endpoint.Address)
		if err != nil {
			return nil, fmt.Errorf("sdk: dial tls: %w", err)
		}
		return conn, nil
	}
	conn, err := d.DialContext(ctx, "tcp", cfg.Endpoint.Address)
	if err != nil {
		return nil, fmt.Errorf("sdk: dial: %w", err)
	}
	return conn, nil
}

func newSession(conn net.Conn, writeTimeout time.Duration) *session {
	s := &session{conn: conn, w: wire.NewWriter(deadlineWriter{conn: conn, timeout: writeTimeout}),
		frames: make(chan wire.Message, frameQueue), readDone: make(chan error, 1), stop: make(chan struct{})}
	s.wg.Add(1)
	go s.read()
	return s
}

func (s *session) read() {
	defer s.wg.Done()
	r := wire.NewReader(s.conn)
	for {
		m, err := r.ReadMessage()
		if err != nil {
			s.readDone <- err
			return
		}
		select {
		case s.frames <- m:
		case <-s.stop:
			return
		}
	}
}

// send implements frameSink.
func (s *session) send(op contract.Opcode, requestID uint32, payload []byte) error {
	return s.w.Send(context.Background(), wire.Message{Opcode: op, RequestID: requestID, Payload: payload})
}

// close tears the connection down and waits for the reader and the writer goroutine.
func (s *session) close() {
	s.once.Do(func() {
		close(s.stop)
		_ = s.conn.Close() // unblocks the reader's read and the writer's write
		s.wg.Wait()
		_ = s.w.Close()
	})
}

// deadlineWriter bounds every socket write.
type deadlineWriter struct {
	conn    net.Conn
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	if err := d.conn.SetWriteDeadline(time.Now().Add(d.timeout)); err != nil {
		return 0, err
	}
	return d.conn.Write(p)
}
