package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/gateway/ratelimit"
	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/redisdur"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// pushGrace bounds the drain of in-flight PushBatch calls at stop: a push is best effort, so a
// MailboxNode cut off after it simply counts it undelivered.
const pushGrace = 2 * time.Second

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
// How: on a lifecycle.Process. start checks Redis (reachable and durable), loads TLS, dials the
// backends, starts the pull batcher and binds TCP (optionally TLS), WebSocket and Push gRPC, each
// registered to close in reverse; the accept loop and the WebSocket server run as loops, Push as
// the Process's gRPC server. At stop, the drain hook closes the client listeners, kicks every
// connection with KICKED{SERVER_DRAIN} and waits, bounded; then Push drains and the dependencies
// close. The pull batcher is a dependency, not a loop, so connections still being drained get
// their pulls answered instead of a stopped batcher's UNAVAILABLE.
//
// Rejected: starting the client listeners only once the backends answer. A gateway that starts
// first in an all-in-one process would then depend on start order; instead it starts, /healthz
// stays 503 until the backends are up, and requests in between get UNAVAILABLE, never a guess.
type Service struct {
	cfg      Config
	log      *slog.Logger
	proc     *lifecycle.Process
	reg      *obs.Registry
	m        *metrics
	registry *registry

	tls  *tls.Config
	auth authn.Verifier
	// untilExpiry is how long a session waits for its credential's expiry (time.Until; tests
	// replace it).
	untilExpiry func(time.Time) time.Duration
	authLimit   *authLimiter
	sendLimit   *ratelimit.Limiter
	rpc         *rpcauth.Transport
	rdb         *redis.Client
	writers     *writerPool
	mailboxes   []*mailboxNode                        // entry i serves the i-th shard range; PULL_MAILBOX goes through its batcher
	sessions    []*sessionNode                        // entry i serves the i-th shard range
	presence    *presenceNode                         // nil without QIM_KAFKA_BROKERS (one gateway, no PresenceDirectory)
	rooms       *rooms                                // nil without QIM_ROOM_ADDRS
	audiences   *expirable.LRU[audienceKey, audience] // groups' members for typing (grouptyping.go)
	shards      contract.ShardCount
	lns         *listeners
	ws          *http.Server

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
	log = log.With("service", "gateway")
	reg := obs.NewRegistry("gateway")
	return &Service{cfg: cfg, log: log, proc: lifecycle.New("gateway", log, reg, cfg.MetricsAddr), reg: reg, m: newMetrics(reg),
		registry: newRegistry(), audiences: newAudienceCache(), conns: make(map[*conn]struct{}), ready: make(chan struct{}), untilExpiry: time.Until}, nil
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
	return s.proc.Run(ctx, s.start, s.readiness)
}

// start performs the start-up checks in order, opens the dependencies and registers the loops,
// the Push server and the drain.
func (s *Service) start(ctx context.Context) error {
	var err error
	if s.tls, err = loadTLS(&s.cfg); err != nil {
		return err
	}
	if err := s.openIdentity(ctx); err != nil {
		return err
	}
	if s.rpc, err = s.cfg.RPC.Load(contract.RPCServiceGatewayPush); err != nil {
		return fmt.Errorf("gateway: refusing to start: %w", err)
	}
	if err := s.openRedis(ctx); err != nil {
		return err
	}
	if err := s.openRateLimits(ctx); err != nil {
		return err
	}
	if err := s.dialBackends(); err != nil {
		return err
	}
	s.startBackends()
	if s.lns, err = s.listen(); err != nil {
		return err
	}
	s.proc.OnClose("listeners", func() error { s.lns.close(); return nil }) // if serving never began
	if err := s.openPresence(ctx); err != nil {
		return err
	}
	s.register()
	return nil
}

// openIdentity builds the credential verifiers: PEM keys are read now (an unreadable one stops
// the start); a JWKS issuer's refresh runs until the gateway stops, and a provider that does not
// answer yet only refuses its tokens.
func (s *Service) openIdentity(ctx context.Context) error {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.proc.OnClose("identity", func() error { stop(); return nil })
	r, err := authn.NewRouter(ctx, authn.Options{DevSecret: s.cfg.TokenSecret, Issuers: s.cfg.identity.Issuers, Log: s.log,
		OnJWKSFetch: func(outcome string) { s.m.jwksFetches.WithLabelValues(outcome).Inc() },
		Webhook:     s.cfg.identity.ConnectWebhook,
		OnHookCall: func(outcome string, took time.Duration) {
			s.m.hookCalls.WithLabelValues(outcome).Inc()
			s.m.hookSeconds.Observe(took.Seconds())
		}})
	if err != nil {
		stop()
		return fmt.Errorf("gateway: refusing to start: %w", err)
	}
	s.auth = r
	s.authLimit = newAuthLimiter(s.cfg.AuthFailureBurst, s.cfg.AuthFailureRefill)
	return nil
}

// openRedis connects the session_epoch Redis and refuses a Redis that is unreachable or could
// roll the counters back.
func (s *Service) openRedis(ctx context.Context) error {
	to := s.cfg.BackendTimeout
	opts := &redis.Options{Addr: s.cfg.RedisAddr, PoolSize: 32, DialTimeout: to, ReadTimeout: to, WriteTimeout: to}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	s.rdb = redis.NewClient(opts)
	s.proc.OnClose("redis", s.rdb.Close)
	if err := s.proc.Await(ctx, "core Redis", func(ctx context.Context) error {
		return msgstore.CheckCommitFactsDurability(ctx, s.rdb, s.cfg.AllowRelaxedRedis)
	}, redisdur.Refused); err != nil {
		return fmt.Errorf("gateway: refusing to start: session_epoch Redis %s: %w", s.cfg.RedisAddr, err)
	}
	return nil
}

// openRateLimits builds the SEND rate limiter on the core Redis (its shared buckets). Its
// instance id is new on every start: a restarted gateway's old count ages out of the buckets.
func (s *Service) openRateLimits(ctx context.Context) error {
	s.sendLimit = ratelimit.New(s.cfg.rateRules, ratelimit.Options{Redis: s.rdb, Sync: s.cfg.RateLimitSync,
		Gateway: strconv.FormatUint(rand.Uint64(), 16), Observer: limitObserver{s.m}})
	if err := s.sendLimit.Preload(ctx); err != nil {
		return fmt.Errorf("gateway: refusing to start: %w", err)
	}
	s.proc.Go("rate limit sync", s.sendLimit.Run)
	return nil
}

// dialBackends creates the backend channels, one per distinct address. Nothing is contacted
// yet (see dialBackend).
func (s *Service) dialBackends() error {
	s.shards = contract.ShardCount(s.cfg.ShardCount)
	ch := &channels{byAd: map[string]*grpc.ClientConn{}, dial: func(service, addr string) (*grpc.ClientConn, error) {
		return dialBackend(addr, s.cfg.BackendTimeout, s.rpc.DialOption(service))
	}}
	defer func() {
		for _, cc := range ch.all {
			s.proc.OnClose("backend channel", cc.Close)
		}
	}()
	var wccs []*grpc.ClientConn
	for _, a := range s.cfg.WriterAddrs {
		cc, err := ch.get(contract.RPCServiceWriter, a)
		if err != nil {
			return err
		}
		wccs = append(wccs, cc)
	}
	s.writers = newWriterPool(s.cfg.WriterAddrs, wccs)
	s.writers.onDown = func(int) { s.m.writerLost.Inc() }
	nodes := map[*grpc.ClientConn]*mailboxNode{}
	for _, a := range s.cfg.MailboxAddrs {
		cc, err := ch.get(contract.RPCServiceMailbox, a)
		if err != nil {
			return err
		}
		if nodes[cc] == nil {
			nodes[cc] = &mailboxNode{addr: a, cc: cc, client: internalv1.NewMailboxClient(cc)}
		}
		s.mailboxes = append(s.mailboxes, nodes[cc])
	}
	for _, a := range s.cfg.SessionAddrs {
		cc, err := ch.get(contract.RPCServiceSession, a)
		if err != nil {
			return err
		}
		s.sessions = append(s.sessions, &sessionNode{addr: a, cc: cc, client: internalv1.NewSessionClient(cc)})
	}
	return s.dialRooms(ch)
}

// dialRooms creates one link per RoomWriter of QIM_ROOM_ADDRS (startBackends runs them).
func (s *Service) dialRooms(ch *channels) error {
	if len(s.cfg.RoomAddrs) == 0 {
		return nil
	}
	r := &rooms{hub: newRoomHub(s.m), addrs: s.cfg.RoomAddrs}
	name := s.cfg.PushAdvertise
	if name == "" {
		name = s.cfg.ListenAddr
	}
	for _, a := range s.cfg.RoomAddrs {
		cc, err := ch.get(contract.RPCServiceRoom, a)
		if err != nil {
			return err
		}
		r.links = append(r.links, newRoomLink(a, cc, r.hub, name, s.m, s.log))
	}
	s.rooms = r
	return nil
}

// startBackends runs the writer watchers and one pull batcher per MailboxNode until the
// dependencies close: after the drain, before the channels they use.
func (s *Service) startBackends() {
	ctx, stop := context.WithCancel(context.Background())
	var batchers []*pullBatcher
	for _, n := range s.mailboxes {
		if n.pulls == nil {
			n.pulls = newPullBatcher(n.client, s.cfg.BackendTimeout, s.m.pullBatchSize)
			batchers = append(batchers, n.pulls)
			go n.pulls.run(ctx)
		}
	}
	for i := range s.writers.addrs {
		go s.writers.watch(ctx, i)
	}
	var links sync.WaitGroup
	if s.rooms != nil {
		for _, l := range s.rooms.links {
			links.Add(1)
			go func() {
				defer links.Done()
				l.run(ctx)
			}()
		}
	}
	s.proc.OnClose("pull batchers", func() error {
		stop()
		for _, b := range batchers {
			<-b.done
		}
		links.Wait()
		return nil
	})
}

// register hands the accept loop, the WebSocket server, the Push server and the drain to the
// lifecycle; Ready closes once the obs server is bound too.
func (s *Service) register() {
	s.ws = newWSServer(s.wsHandler())
	s.proc.Go("tcp accept", func(ctx context.Context) error { return s.acceptTCP(ctx, s.lns.tcp) })
	s.proc.Go("revocations", s.followRevocations)
	s.proc.Go("websocket", func(context.Context) error { return serveWS(s.ws, s.lns.ws) })
	gs := grpc.NewServer(s.rpc.ServerOptions(s.reg, s.log)...)
	internalv1.RegisterPushServer(gs, pushServer{s: s})
	s.proc.Serve(lifecycle.GRPC{Server: gs, Listener: s.lns.push, AddrVar: "QIM_GATEWAY_PUSH_LISTEN", Grace: pushGrace})
	s.proc.OnStarted(func() {
		a := Addrs{TCP: s.lns.tcp.Addr().String(), WS: s.lns.ws.Addr().String(), Push: s.lns.push.Addr().String(),
			Metrics: s.proc.MetricsAddr()}
		s.addrs.Store(&a)
		close(s.ready)
		s.log.Info("gateway: serving", "tcp", a.TCP, "tls", s.tls != nil, "ws", a.WS, "push", a.Push, "rpc", s.rpc.Mode(), "metrics", a.Metrics,
			"token_secret", obs.SecretDigest(s.cfg.TokenSecret))
	})
	s.proc.OnStop(s.drain)
}

// readiness is /healthz: the session_epoch Redis answers and every backend holds a READY
// channel. A gateway that cannot authenticate or forward must leave the load balancer's rotation.
// (The Process answers 503 on its own once the gateway is stopping.)
func (s *Service) readiness(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.BackendTimeout)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("gateway: core redis: %w", err)
	}
	if err := s.writers.anyReady(ctx); err != nil {
		return err
	}
	if s.presence != nil {
		if err := s.presence.ready(); err != nil {
			return err
		}
	}
	// Each MailboxNode and SessionProjection serves users no other instance serves.
	for _, n := range s.mailboxes {
		if err := waitBackendReady(ctx, "mailbox "+n.addr, n.cc); err != nil {
			return err
		}
	}
	for _, n := range s.sessions {
		if err := waitBackendReady(ctx, "session "+n.addr, n.cc); err != nil {
			return err
		}
	}
	return nil
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
