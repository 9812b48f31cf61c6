package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
)

const (
	// wsShutdownGrace bounds the WebSocket server's shutdown (upgrades in progress).
	wsShutdownGrace = 2 * time.Second
	// drainGrace bounds how long shutdown waits for connections to take their KICKED and go.
	drainGrace = 10 * time.Second
	// drainRetryAfterMs is the reconnect hint in KICKED{SERVER_DRAIN}: long enough for a load
	// balancer to notice this instance left, short enough not to strand users.
	drainRetryAfterMs = 1000
	// drainWorkers bounds the kicks in progress at once, so a gateway with 100,000 clients does
	// not start 100,000 goroutines to say goodbye.
	drainWorkers = 64
)

// drain is the gateway's stop hook: no new clients, every connection gets KICKED{SERVER_DRAIN}
// and closes; after drainGrace, stragglers are cut. The Push server drains after it (the
// Process stops gRPC servers once the hooks returned); a push that reaches a leaving connection
// is harmless, since pushes are best effort and move no cursor.
func (s *Service) drain() {
	_ = s.lns.tcp.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wsShutdownGrace)
	_ = s.ws.Shutdown(ctx) // hijacked WebSocket connections are ours, not the server's
	cancel()

	s.mu.Lock()
	s.closing = true
	live := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		live = append(live, c)
	}
	s.mu.Unlock()

	// Kicks write to sockets, which a stuck client can hold for WriteTimeout each, so the whole
	// drain — kicks included — is bounded by drainGrace; then sockets are closed hard, which
	// fails the pending writes and lets every kick and connection finish.
	kicked := make(chan struct{})
	go func() {
		defer close(kicked)
		work := make(chan *conn)
		var wg sync.WaitGroup
		for range min(drainWorkers, len(live)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range work {
					c.kick(contract.KickServerDrain, "gateway shutting down", drainRetryAfterMs)
				}
			}()
		}
		for _, c := range live {
			work <- c
		}
		close(work)
		wg.Wait()
	}()
	done := make(chan struct{})
	go func() { <-kicked; s.connWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainGrace):
		s.mu.Lock()
		rest := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			rest = append(rest, c)
		}
		s.mu.Unlock()
		s.log.Warn("gateway: drain grace over; closing remaining connections", "connections", len(rest))
		for _, c := range rest {
			_ = c.hardClose()
		}
		<-done
	}
}
