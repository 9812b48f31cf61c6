package sdk

import (
	"context"
	"fmt"
	"time"
)

// runLoop is the connection goroutine: connect, serve, back off, again — until ctx ends (Close,
// Disconnect, or the Connect context) or the engine reports a terminal end (kicked, refused).
// It owns the engine: nothing else touches protocol state.
func (c *Client) runLoop(ctx context.Context, loop chan struct{}) {
	e := newEngine(&c.cfg, c.st, c.events.push, &c.stats, func() int { n, _ := c.events.backlog(); return n })
	e.hooks, e.rooms, e.loop, e.background = c.hooks, c.rooms, loop, &c.background
	defer e.endRooms()
	rc := newReconnect(&c.cfg)
	for {
		end := c.serveOnce(ctx, e)
		if ctx.Err() != nil {
			c.events.push(Offline{Err: ctx.Err()})
			return
		}
		if end.terminal {
			c.events.push(Offline{Err: end.err})
			return
		}
		delay := rc.next(end)
		c.stats.reconnects.Add(1)
		c.cfg.Logger.Info("sdk: connection ended; reconnecting", "err", end.err, "in", delay)
		c.events.push(Offline{Err: end.err, Retry: true, RetryIn: delay})
		if !c.pause(ctx, e, delay) {
			c.events.push(Offline{Err: ctx.Err()})
			return
		}
	}
}

type serveEnd struct {
	connEnd
	reachedOnline bool
}

// serveOnce dials, authenticates and runs one connection until it ends.
func (c *Client) serveOnce(ctx context.Context, e *engine) serveEnd {
	token, err := c.cfg.Token(ctx)
	if err != nil {
		return serveEnd{connEnd: connEnd{err: fmt.Errorf("sdk: token source: %w", err)}}
	}
	conn, err := dial(ctx, &c.cfg)
	if err != nil {
		return serveEnd{connEnd: connEnd{err: err}}
	}
	s := newSession(conn, c.cfg.WriteTimeout)
	defer s.close()
	e.attach(s, token, time.Now())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	online := false
	for e.end == nil {
		online = online || e.online
		resetTimer(timer, e.nextDeadline(time.Now()))
		select {
		case m := <-s.frames:
			e.onFrame(m, time.Now())
		case err := <-s.readDone:
			// The reader queued every frame it read before reporting the end, and select picks
			// among ready cases at random: handle those frames first, or a KICKED{REPLACED}
			// followed by the server's close would look like a plain drop and the client would
			// reconnect and evict the device that replaced it.
			drain(s, e)
			e.fail(fmt.Errorf("sdk: connection lost: %w", err))
		case <-c.wake:
			e.flushPending(time.Now())
		case <-c.reads:
			e.flushReads(time.Now())
		case cmd := <-c.cmds:
			e.startHistory(cmd, time.Now())
		case cmd := <-c.rpcs:
			e.startRPC(cmd, time.Now())
		case cmd := <-c.roomOps:
			e.startRoom(cmd, time.Now())
		case <-c.appState:
			e.appStateChanged(time.Now())
		case t := <-c.typing:
			e.sendTyping(t)
		case <-timer.C:
			drain(s, e) // a PONG queued behind a long commit must count before the deadline does
			e.onTick(time.Now())
		case <-ctx.Done():
			e.fail(ctx.Err())
		}
	}
	online = online || e.online
	end := *e.end
	e.detach()
	return serveEnd{connEnd: end, reachedOnline: online}
}

// drain handles the frames already queued (at most one queue's worth, so a steady stream cannot
// hold the caller off).
func drain(s *session, e *engine) {
	for i := 0; i < cap(s.frames) && e.end == nil; i++ {
		select {
		case m := <-s.frames:
			e.onFrame(m, time.Now())
		default:
			return
		}
	}
}

// pause waits out a reconnect delay. History and group calls meanwhile are answered offline
// (History falls back to the local store) and Send, CreateGroup and MarkRead wake-ups are
// dropped: the sends, creates and owed watermarks are in the store, and the next connection
// sends them after reconciling. Room calls go to the engine, which owns the room set: a join
// fails offline, a leave forgets the room, a room send waits for the next connection.
func (c *Client) pause(ctx context.Context, e *engine, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		case cmd := <-c.cmds:
			cmd.reply <- historyResult{err: ErrOffline}
		case cmd := <-c.rpcs:
			cmd.reply <- rpcResult{err: ErrOffline}
		case cmd := <-c.roomOps:
			e.startRoom(cmd, time.Now())
		case <-c.wake:
		case <-c.reads:
		}
	}
}

// resetTimer arms t for deadline (far in the future when there is none).
func resetTimer(t *time.Timer, deadline time.Time) {
	d := time.Hour
	if !deadline.IsZero() {
		d = max(time.Until(deadline), 0)
	}
	t.Reset(d)
}
