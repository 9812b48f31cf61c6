package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Addrs are the bound addresses of a running gateway (useful with port 0 in tests).
type Addrs struct {
	TCP, WS, Push, Metrics string
}

// Service is one ConnectionNode process.
//
// Invariants: every connection is admitted under mu and counted in connWG before its goroutine
// starts, and none is admitted once closing is set, so drain's Wait sees every connection; the
// number of live connections never exceeds MaxConns; Ready is closed only after every listener is
// bound, and /healthz is green only while Redis and every backend channel are really reachable.
//
// How: Run checks Redis (reachable and durable), dials the backends, binds TCP (optionally TLS),
// WebSocket, Push gRPC and the obs server, then runs the accept loops in an errgroup; when ctx
// ends, drain stops the listeners, kicks every connection with SERVER_DRAIN and waits, bounded.
//
// Rejected: starting the client listeners only once the backends answer. A gateway that starts
// first in an all-in-one process would then depend on start order; instead it starts, /healthz
// stays 503 until the backends are up, and requests in between get UNAVAILABLE, never a guess.
type Service struct {
	cfg      Config
	log      *slog.Logger
	reg      *obs.Registry
	m        *metrics
	registry *registry

	tls       *tls.Config
	rdb       *redis.Client
	writerCC  *grpc.ClientConn
	mailboxCC *grpc.ClientConn
	sessionCC *grpc.ClientConn
	writer    internalv1.WriterClient
	mailbox   internalv1.MailboxClient
	session   internalv1.SessionClient
	pulls     *pullBatcher // PULL_MAILBOX goes through it; set by Run before any connection

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing bool
	connWG  sync.WaitGroup // connection goroutines and the kicks they start

	addrs atomic.Pointer[Addrs]
	ready chan struct{}
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	reg := obs.NewRegistry("gateway")
	return &Service{cfg: cfg, log: log.With("service", "gateway"), reg: reg, m: newMetrics(reg), registry: newRegistry(),
		conns: make(map[*conn]struct{}), ready: make(chan struct{})}, nil
}

// Ready is closed once every listener is bound and Addrs is valid.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Addrs returns the bound addresses; zero before Ready.
func (s *Service) Addrs() Addrs {
	if a := s.addrs.Load(); a != nil {
		return *a
	}
	return Addrs{}
}

// Run starts the gateway and blocks until ctx ends or a listener fails. Start-up fails closed:
// an unreachable or non-durable core Redis (session_epoch must never go back), an unreadable
// TLS certificate or a taken port refuse to start with an error naming the cause. On the way out
// every connection gets KICKED{SERVER_DRAIN} before its socket closes.
func (s *Service) Run(ctx context.Context) error {
	if err := s.connect(ctx); err != nil {
		return err
	}
	defer s.disconnect()
	pctx, stopPulls := context.WithCancel(context.Background())
	defer stopPulls() // before disconnect: no batch is sent on a closed channel
	s.pulls = newPullBatcher(s.mailbox, s.cfg.BackendTimeout, s.m.pullBatchSize)
	go s.pulls.run(pctx)
	lns, err := s.listen()
	if err != nil {
		return err
	}
	health := obs.NewServer(s.cfg.MetricsAddr, s.reg, s.readiness)
	if err := health.Start(); err != nil {
		lns.close()
		return err
	}
	defer func() { _ = health.Shutdown(context.Background()) }()
	ws := newWSServer(s.wsHandler())
	gs := grpc.NewServer()
	internalv1.RegisterPushServer(gs, pushServer{s: s})
	s.addrs.Store(&Addrs{TCP: lns.tcp.Addr().String(), WS: lns.ws.Addr().String(), Push: lns.push.Addr().String(), Metrics: health.Addr()})
	close(s.ready)
	s.log.Info("gateway: serving", "tcp", lns.tcp.Addr().String(), "tls", s.tls != nil, "ws", lns.ws.Addr().String(),
		"push", lns.push.Addr().String(), "metrics", health.Addr(), "token_secret", obs.SecretDigest(s.cfg.TokenSecret))

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.acceptTCP(gctx, lns.tcp) })
	g.Go(func() error {
		if err := ws.Serve(lns.ws); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("gateway: websocket server: %w", err)
		}
		return nil
	})
	g.Go(func() error { return gs.Serve(lns.push) })
	g.Go(func() error {
		<-gctx.Done()
		s.drain(lns, ws, gs)
		return nil
	})
	return g.Wait()
}

// connect performs the start-up checks and dials the backends.
func (s *Service) connect(ctx context.Context) error {
	var err error
	if s.tls, err = loadTLS(&s.cfg); err != nil {
		return err
	}
	to := s.cfg.BackendTimeout
	s.rdb = redis.NewClient(&redis.Options{Addr: s.cfg.RedisAddr, PoolSize: 32, DialTimeout: to, ReadTimeout: to, WriteTimeout: to})
	cctx, cancel := context.WithTimeout(ctx, 2*to)
	defer cancel()
	if err := s.rdb.Ping(cctx).Err(); err != nil {
		_ = s.rdb.Close()
		return fmt.Errorf("gateway: refusing to start: core Redis %s unreachable: %w", s.cfg.RedisAddr, err)
	}
	if err := msgstore.CheckCommitFactsDurability(cctx, s.rdb, s.cfg.AllowRelaxedRedis); err != nil {
		_ = s.rdb.Close()
		return fmt.Errorf("gateway: refusing to start: session_epoch Redis: %w", err)
	}
	if s.writerCC, err = dialBackend(s.cfg.WriterAddr, to); err != nil {
		_ = s.rdb.Close()
		return err
	}
	if s.mailboxCC, err = dialBackend(s.cfg.MailboxAddr, to); err != nil {
		_ = s.rdb.Close()
		_ = s.writerCC.Close()
		return err
	}
	if s.sessionCC, err = dialBackend(s.cfg.SessionAddr, to); err != nil {
		_ = s.rdb.Close()
		_ = s.writerCC.Close()
		_ = s.mailboxCC.Close()
		return err
	}
	s.writer = internalv1.NewWriterClient(s.writerCC)
	s.mailbox = internalv1.NewMailboxClient(s.mailboxCC)
	s.session = internalv1.NewSessionClient(s.sessionCC)
	return nil
}

func (s *Service) disconnect() {
	_ = s.writerCC.Close()
	_ = s.mailboxCC.Close()
	_ = s.sessionCC.Close()
	_ = s.rdb.Close()
}

// readiness is /healthz: the session_epoch Redis answers and every backend holds a READY
// channel. A gateway that cannot authenticate or forward must leave the load balancer's rotation.
func (s *Service) readiness(ctx context.Context) error {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return errors.New("gateway: draining")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.BackendTimeout)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("gateway: core redis: %w", err)
	}
	if err := waitBackendReady(ctx, "writer", s.writerCC); err != nil {
		return err
	}
	if err := waitBackendReady(ctx, "mailbox", s.mailboxCC); err != nil {
		return err
	}
	return waitBackendReady(ctx, "session", s.sessionCC)
}

// admitConn registers a new client connection, or closes it when the gateway is draining or
// full. The WaitGroup Add happens under the lock that drain takes before it waits, so no
// connection can slip in after the wait started.
func (s *Service) admitConn(nc net.Conn, transport string, hardClose func() error) *conn {
	s.mu.Lock()
	reason := ""
	switch {
	case s.closing:
		reason = "draining"
	case len(s.conns) >= s.cfg.MaxConns:
		reason = "max_conns"
	}
	if reason != "" {
		s.mu.Unlock()
		s.m.connRejected.WithLabelValues(reason).Inc()
		_ = nc.Close()
		return nil
	}
	defer s.mu.Unlock()
	c := newConn(s, nc, transport, hardClose)
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.m.connections.WithLabelValues(transport).Inc()
	return c
}

// releaseConn is the last thing a connection does.
func (s *Service) releaseConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.m.connections.WithLabelValues(c.transport).Dec()
	s.connWG.Done()
}

// kickAsync kicks c on a goroutine counted in connWG. Callers are live connections (connWG > 0),
// so the Add cannot race drain's Wait.
func (s *Service) kickAsync(c *conn, reason contract.KickReason, detail string, retryAfterMs uint32) {
	s.connWG.Add(1)
	go func() {
		defer s.connWG.Done()
		c.kick(reason, detail, retryAfterMs)
	}()
}
