package sdklane

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/sdk"
)

// deviceID is the device every lane client logs in with (each client is its own user).
const deviceID = "loadgen-sdk"

// client is one SDK client of the lane and its side of the ledger: out is what it sends to its
// peer, in (the peer's out) what it receives from it.
type client struct {
	idx      int
	user     contract.UserID
	peer     contract.UserID
	peerIdx  int
	run      uint64
	sdk      *sdk.Client
	out, in  *flowLog
	sends    *sendJournal      // this client's sends and outcomes, for the chaos history
	hist     *history.Recorder // env.History: deliveries to this client (nil: none recorded)
	synced   chan struct{}     // closed at the first SyncDone
	syncOnce sync.Once
	pumpDone chan struct{} // closed when Events was closed and drained
	offline  atomic.Int64  // Offline events (connection ends)
	stopped  atomic.Value  // error: the connection loop stopped for good (Offline{Retry: false})
}

// openClients opens env.Clients file-store clients, pairs 2k ↔ 2k+1, starts their event pumps
// and connects them. On error the clients opened so far are returned for closing.
func openClients(ctx context.Context, env loadgen.LaneEnv, dir string) ([]*client, error) {
	cs := make([]*client, 0, env.Clients)
	expires := time.Now().Add(env.Duration + env.Settle + time.Hour).UnixMilli()
	for i := range env.Clients {
		user := env.FirstUser + contract.UserID(i)
		tok, err := devtoken.Issue(env.TokenSecret, devtoken.Claims{Tenant: env.Tenant, User: user, Device: deviceID, ExpiresAtMs: expires})
		if err != nil {
			return cs, fmt.Errorf("sdklane: issue token for client %d: %w", i, err)
		}
		sc, err := sdk.Open(sdk.Config{DataDir: filepath.Join(dir, "c"+strconv.Itoa(i)),
			Endpoint: contract.Endpoint{Address: env.Gateway, Mode: contract.ModeTCP}, Tenant: env.Tenant, User: user,
			Device: deviceID, Token: sdk.StaticToken(tok), ClientVersion: "qim-loadgen-sdk/1"})
		if err != nil {
			return cs, fmt.Errorf("sdklane: open client %d: %w", i, err)
		}
		c := &client{idx: i, user: user, peerIdx: i ^ 1, peer: env.FirstUser + contract.UserID(i^1), run: env.RunID,
			sdk: sc, out: newFlowLog(), synced: make(chan struct{}), pumpDone: make(chan struct{}), hist: env.History}
		c.sends = newSendJournal(env.History, c.user, c.peer)
		cs = append(cs, c)
		go c.pump()
	}
	for i := 0; i < len(cs); i += 2 {
		cs[i].in, cs[i+1].in = cs[i+1].out, cs[i].out
	}
	for _, c := range cs {
		if err := c.sdk.Connect(ctx); err != nil {
			return cs, fmt.Errorf("sdklane: connect client %d: %w", c.idx, err)
		}
	}
	return cs, nil
}

// waitSynced waits until every client finished its first reconciliation.
func waitSynced(ctx context.Context, cs []*client, bound time.Duration) error {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for _, c := range cs {
		select {
		case <-c.synced:
		case <-ctx.Done():
			return fmt.Errorf("sdklane: waiting for client %d to log in: %w", c.idx, ctx.Err())
		case <-timer.C:
			err, _ := c.stopped.Load().(error)
			return fmt.Errorf("sdklane: client %d not online and reconciled within %s (%d disconnects; stopped: %v)",
				c.idx, bound, c.offline.Load(), err)
		}
	}
	return nil
}

// closeClients closes every client (waiting for its connection loop) and its event pump.
func closeClients(cs []*client) {
	for _, c := range cs {
		_ = c.sdk.Close() // closing a lane client only ends the run; the stores stay on disk
		<-c.pumpDone
	}
}

// pump turns the client's events into ledger facts and history events. It never blocks on
// anything but the flow logs' and the history's mutexes, so the SDK's event queue stays short.
func (c *client) pump() {
	defer close(c.pumpDone)
	for ev := range c.sdk.Events() {
		c.handle(ev, time.Now().UnixMicro())
	}
}

// handle is one event of the pump, observed at atUs.
func (c *client) handle(ev sdk.Event, atUs int64) {
	switch e := ev.(type) {
	case sdk.Committed:
		c.out.recordCommitted(e.ClientMessageID)
		c.sends.committed(e, atUs)
	case sdk.Failed:
		c.out.recordFailed(e.ClientMessageID, e.Code)
		c.sends.failed(e, atUs)
	case sdk.MessagesAdded:
		for i := range e.Messages {
			c.received(&e.Messages[i], atUs)
		}
	case sdk.SyncProgress:
		if e.Phase == sdk.SyncDone {
			c.syncOnce.Do(func() { close(c.synced) })
		}
	case sdk.Offline:
		c.offline.Add(1)
		if !e.Retry {
			err := e.Err
			if err == nil {
				err = errors.New("connection loop stopped")
			}
			c.stopped.Store(err)
		}
	}
}

// received records one surfaced message. The SDK reports own sends as Committed, not here; an
// own message that shows up anyway is ignored (the sender's side is judged by its outcomes).
// Only the peer's load messages of this run become history deliveries: a stray has no send to
// name.
func (c *client) received(m *sdk.Message, atUs int64) {
	if m.Sender == c.user {
		return
	}
	b, ok := parseBody(m.Body)
	if m.Sender != c.peer || !m.HasBody || !ok || b.run != c.run || int(b.sender) != c.peerIdx {
		c.in.recordStray()
		return
	}
	c.in.recordReceived(b.ordinal, m.ID)
	c.delivered(m, b, atUs)
}

// sendLoop sends to the peer at env.Rate/env.Clients msg/s for env.Duration. Clients start
// staggered across one interval so the lane's sends do not arrive in bursts of env.Clients.
// Send only records the pending row (SQLite) and returns: the schedule never waits for an ACK.
func (c *client) sendLoop(ctx context.Context, env loadgen.LaneEnv, start time.Time) {
	rate := env.Rate / float64(env.Clients)
	offset := time.Duration(float64(time.Second) / rate * float64(c.idx) / float64(env.Clients))
	sched := loadgen.Scheduler{Rate: rate, Duration: env.Duration, Sinks: 1}
	sched.Run(ctx, start.Add(offset), func(_ int, seq int64, _ time.Time) bool {
		b := body{run: c.run, sentUs: time.Now().UnixMicro(), sender: uint32(c.idx), ordinal: uint64(seq)}
		id, err := c.sdk.Send(ctx, c.peer, b.encode(), sdk.SendOptions{})
		c.recordSend(id, b, err)
		return err == nil
	})
}

// recordSend records what Send returned for b in the ledger and, when it returned an id, in the
// history (sendJournal.invoked says why an error is not an Invoke).
func (c *client) recordSend(id contract.ClientMessageID, b body, err error) {
	c.out.recordSend(id, b.ordinal, err)
	if err == nil {
		c.sends.invoked(id, b.ordinal, b.sentUs)
	}
}

// laneStats sums the SDK's own counters over the lane's clients.
type laneStats struct {
	reconnects, sendFrames, rebuilds, offline uint64
	backlogPeak                               int
	stopped                                   int
}

func sumStats(cs []*client) laneStats {
	var s laneStats
	for _, c := range cs {
		st := c.sdk.Stats()
		s.reconnects += st.Reconnects
		s.sendFrames += st.Sends
		s.rebuilds += st.Rebuilds
		s.backlogPeak = max(s.backlogPeak, st.EventBacklogPeak)
		s.offline += uint64(c.offline.Load())
		if c.stopped.Load() != nil {
			s.stopped++
		}
	}
	return s
}
