package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/lifecycle"
)

// alpnQIM is the ALPN protocol id of the binary frame protocol on a TLS connection, so one TLS
// port can later also offer http/1.1 (WebSocket) and route by what the client negotiated.
const alpnQIM = "qim/1"

// wsPath is where the WebSocket transport is served.
const wsPath = "/ws"

// listeners are the sockets start binds before the gateway reports ready.
type listeners struct {
	tcp, ws, push net.Listener
}

func (l *listeners) close() {
	for _, ln := range []net.Listener{l.tcp, l.ws, l.push} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// listen binds every listener or none: a port clash fails start-up naming the address and the
// variable that sets it.
func (s *Service) listen() (*listeners, error) {
	l := &listeners{}
	binds := []struct {
		dst  *net.Listener
		addr string
		env  string
	}{
		{&l.tcp, s.cfg.ListenAddr, "QIM_GATEWAY_LISTEN"},
		{&l.ws, s.cfg.WSListenAddr, "QIM_GATEWAY_WS_LISTEN"},
		{&l.push, s.cfg.PushListenAddr, "QIM_GATEWAY_PUSH_LISTEN"},
	}
	for _, b := range binds {
		ln, err := net.Listen("tcp", b.addr)
		if err != nil {
			l.close()
			return nil, &lifecycle.ListenError{Service: "gateway", Addr: b.addr, Var: b.env, Err: err}
		}
		*b.dst = ln
	}
	if s.tls != nil {
		l.tcp = tls.NewListener(l.tcp, s.tls)
	}
	return l, nil
}

// loadTLS builds the TLS 1.3 configuration when a certificate is configured.
func loadTLS(cfg *Config) (*tls.Config, error) {
	if cfg.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("gateway: load TLS certificate %s: %w", cfg.TLSCertFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, NextProtos: []string{alpnQIM}}, nil
}

// Accept retry bounds: a transient accept failure (a timeout, or the process out of file
// descriptors) is retried from acceptRetryMin doubling to acceptRetryMax, so a gateway at its fd
// limit neither spins nor stays deaf for long once descriptors are free again.
const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// acceptTCP accepts client connections until the listener is closed. The TLS handshake, when
// configured, happens on the connection's first read, inside its AUTH deadline, so a client
// stalling the handshake costs only its own goroutine.
func (s *Service) acceptTCP(ctx context.Context, ln net.Listener) error {
	retry := backoff.New(acceptRetryMin, acceptRetryMax)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil //nolint:nilerr // drain closed the listener: the normal end of accepting
			}
			if !acceptRetryable(err) {
				return fmt.Errorf("gateway: accept: %w", err)
			}
			s.log.Warn("gateway: accept failed; backing off", "err", err)
			if !retry.Wait(ctx) {
				return nil
			}
			continue
		}
		retry.Reset()
		if c := s.admitConn(nc, "tcp", nil); c != nil {
			go c.serve()
		}
	}
}

// acceptRetryable reports an accept failure that passes on its own.
func acceptRetryable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// wsHandler upgrades /ws requests and serves the frame protocol over binary messages. The
// handler goroutine (owned by net/http) becomes the connection's read loop.
func (s *Service) wsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(wsPath, func(w http.ResponseWriter, r *http.Request) {
		wc, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			OriginPatterns: s.cfg.WSOrigins,
			// Frames compress per message with zstd already; permessage-deflate would spend
			// memory per connection (its context) for nothing.
			CompressionMode: websocket.CompressionDisabled,
		})
		if err != nil {
			return // Accept has answered the HTTP error
		}
		// The NetConn lives until we close it, not until a request context ends: a shutdown
		// must still be able to write KICKED{SERVER_DRAIN} before the socket goes.
		nc := websocket.NetConn(context.Background(), wc, websocket.MessageBinary)
		if c := s.admitConn(nc, "ws", wc.CloseNow); c != nil {
			c.serve()
		}
	})
	return mux
}

func newWSServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
}

// serveWS serves WebSocket upgrades on ln until drain shuts the server down.
func serveWS(ws *http.Server, ln net.Listener) error {
	if err := ws.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: websocket server: %w", err)
	}
	return nil
}
