package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
)

// Client is one account on one device: a local store and, once Connect is called, one
// connection goroutine that keeps it in sync with the server.
//
// Lifecycle: Open opens the store at its stable path and starts nothing on the network (a host
// constructs the client at start-up and connects only on an explicit user action); Connect starts
// the connection loop; Disconnect stops it; Close stops it, closes the store and the Events
// channel. The store-only methods (Send, Pending, Conversations, LocalMessages, MarkRead) work
// whether or not the client is connected.
//
// Goroutines: the event pump (from Open to Close) and the connection loop (from Connect to
// Disconnect/Close or a terminal kick), which itself owns one reader and one writer goroutine per
// connection. Each is waited for by its owner; none outlives Close.
type Client struct {
	cfg    Config
	st     *store.Store
	events *eventQueue
	wake   chan struct{}    // capacity 1: Send stored something
	reads  chan struct{}    // capacity 1: MarkRead raised a watermark the server does not hold
	cmds   chan *historyCmd // History calls for the connection goroutine
	rpcs   chan *rpcCmd     // group calls (Members, LeaveGroup) for the connection goroutine
	// roomOps carries JoinRoom, LeaveRoom and SendRoom to the connection goroutine; rooms is the
	// joined set, which outlives connections and loops (roomstate.go says who may touch it).
	roomOps chan *roomCmd
	rooms   *roomSet
	// background is the app state SetForeground reported last; appState wakes the connection
	// goroutine to tell the server at once (a PING carries it).
	background atomic.Bool
	appState   chan struct{}
	typing     chan *qimv1.Typing // SetTyping's frames for the connection goroutine
	stats      stats
	hooks      testHooks

	mu       sync.Mutex
	closed   bool
	cancel   context.CancelFunc
	loopDone chan struct{} // closed when the connection loop returned; nil before Connect
}

// Open validates cfg and opens the local store. It does no network I/O.
func Open(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	canonical, err := cfg.Endpoint.Canonical()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	id := store.Identity{EndpointScope: contract.EndpointScope(canonical), Tenant: cfg.Tenant, User: cfg.User}
	path, err := store.Path(cfg.DataDir, id)
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	st, err := store.Open(context.Background(), path, id)
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	return &Client{cfg: cfg, st: st, events: newEventQueue(cfg.EventBuffer),
		wake: make(chan struct{}, 1), reads: make(chan struct{}, 1), cmds: make(chan *historyCmd, 16),
		rpcs: make(chan *rpcCmd, 16), roomOps: make(chan *roomCmd, 16), rooms: newRoomSet(), appState: make(chan struct{}, 1),
		typing: make(chan *qimv1.Typing, 8)}, nil
}

// Connect starts the connection loop in the background and returns at once. The loop runs until
// ctx ends, Disconnect or Close is called, or the server ends the session for good (KICKED
// REPLACED/LOGGED_OUT/BANNED, a refused token); it reconnects with exponential backoff and
// jitter otherwise. Progress arrives as events.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.loopDone != nil {
		select {
		case <-c.loopDone: // the previous loop ended (kick, refused token): a new one may start
		default:
			return ErrConnected
		}
	}
	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	c.cancel, c.loopDone = cancel, done
	go func() {
		defer close(done)
		c.runLoop(loopCtx, done)
	}()
	return nil
}

// Disconnect stops the connection loop and waits for it. Pending sends stay in the store and go
// out after the next Connect. It is a no-op when not connected.
func (c *Client) Disconnect() {
	c.mu.Lock()
	cancel, done := c.cancel, c.loopDone
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Close disconnects, stops the event pump (closing the Events channel; undelivered events are
// dropped) and closes the store.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.Disconnect()
	c.events.close()
	return c.st.Close()
}

// Events delivers notifications in order (see Event). It is closed by Close. The client never
// blocks on it: unread events queue up in memory (counted in Stats) and pulls pause above
// Config.EventBacklogPause.
func (c *Client) Events() <-chan Event { return c.events.out }

// SendOptions are the optional parts of a message.
type SendOptions struct {
	Type       contract.MessageType // default TEXT
	CustomType string               // CUSTOM messages, at most contract.CustomTypeMaxBytes
	Mentions   []contract.UserID
}

// Send records a direct message to peer as pending and returns its client_message_id at once,
// online or offline. The message goes out when the client is connected and reconciled; Committed
// or Failed reports the outcome, and Pending lists it until then (also across restarts).
func (c *Client) Send(ctx context.Context, peer contract.UserID, body []byte, opts SendOptions) (contract.ClientMessageID, error) {
	if peer == 0 {
		return contract.ClientMessageID{}, fmt.Errorf("%w: peer user must not be zero", ErrInvalid)
	}
	return c.addPending(ctx, store.NewPending{Peer: peer}, body, opts)
}

// addPending validates a send, records it with its target and wakes the connection goroutine.
func (c *Client) addPending(ctx context.Context, np store.NewPending, body []byte, opts SendOptions) (contract.ClientMessageID, error) {
	if c.isClosed() {
		return contract.ClientMessageID{}, ErrClosed
	}
	opts, err := checkSend(body, opts)
	if err != nil {
		return contract.ClientMessageID{}, err
	}
	np.Type, np.CustomType, np.Body, np.Mentions, np.NowMs = opts.Type, opts.CustomType, body, opts.Mentions, time.Now().UnixMilli()
	p, err := c.st.AddPending(ctx, np)
	if err != nil {
		return contract.ClientMessageID{}, fmt.Errorf("sdk: record send: %w", err)
	}
	c.wakeSender()
	return p.ClientMessageID, nil
}

// checkSend validates what a send carries and fills in the default type (TEXT).
func checkSend(body []byte, opts SendOptions) (SendOptions, error) {
	if opts.Type == contract.MessageUnknown {
		opts.Type = contract.MessageText
	}
	switch {
	case opts.Type.ServerOnly():
		return opts, fmt.Errorf("%w: only the server sends %s messages", ErrInvalid, opts.Type)
	case len(opts.CustomType) > contract.CustomTypeMaxBytes:
		return opts, fmt.Errorf("%w: custom type above %d bytes", ErrInvalid, contract.CustomTypeMaxBytes)
	case len(body) > contract.MaxFramePayload-1024:
		return opts, fmt.Errorf("%w: body of %d bytes does not fit one frame", ErrInvalid, len(body))
	}
	return opts, nil
}

// SetForeground tells the client whether the app is in the foreground (true, the default) or
// in the background. The server fits the heartbeat to it: in the background the interval may
// grow to 240 s instead of 120 s, so a phone's radio wakes less often; coming back to the
// foreground, the next PING — sent at once — brings it down again. Safe from any goroutine.
func (c *Client) SetForeground(foreground bool) {
	if c.background.Swap(!foreground) == !foreground {
		return
	}
	select {
	case c.appState <- struct{}{}:
	default:
	}
}

// SetTyping tells peer that the user is typing to them (true) or stopped (false). Best effort and
// never stored: offline, or with a full queue, it is dropped and reports false. Call it again
// every few seconds while the user types (a true expires on the peer after 6 s).
func (c *Client) SetTyping(peer contract.UserID, typing bool) bool {
	select {
	case c.typing <- &qimv1.Typing{PeerUserId: uint64(peer), Typing: typing}:
		return true
	default:
		return false
	}
}

// SetGroupTyping tells the other current members of group that the user is typing there (true)
// or stopped (false), like SetTyping. The server drops it in a group of more than
// contract.TypingGroupMaxMembers members and for a user who is not a current member.
func (c *Client) SetGroupTyping(group contract.ConversationID, typing bool) bool {
	conv, err := groupConversation(group)
	if err != nil {
		return false
	}
	gid := conv.Bytes()
	select {
	case c.typing <- &qimv1.Typing{GroupId: gid[:], Typing: typing}:
		return true
	default:
		return false
	}
}

// wakeSender tells the connection goroutine that the store holds something new to send.
func (c *Client) wakeSender() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// History returns one page of a conversation from the server (PULL_HISTORY), storing what it
// receives; offline it returns the local page instead (FromServer false). Older with anchor 0
// starts at the newest message; pages are ascending by seq in both directions.
func (c *Client) History(ctx context.Context, conv contract.ConversationID, anchor contract.ConversationSeq, dir Direction, limit int) (HistoryPage, error) {
	if limit <= 0 {
		return HistoryPage{}, fmt.Errorf("%w: limit must be positive", ErrInvalid)
	}
	c.mu.Lock()
	closed, done := c.closed, c.loopDone
	c.mu.Unlock()
	if closed {
		return HistoryPage{}, ErrClosed
	}
	if done != nil {
		cmd := &historyCmd{conv: conv, anchor: anchor, dir: dir, limit: limit, reply: make(chan historyResult, 1)}
		select {
		case c.cmds <- cmd:
			select {
			case r := <-cmd.reply:
				if !errors.Is(r.err, ErrOffline) {
					return r.page, r.err
				}
			case <-done:
			case <-ctx.Done():
				return HistoryPage{}, ctx.Err()
			}
		case <-done:
		case <-ctx.Done():
			return HistoryPage{}, ctx.Err()
		}
	}
	msgs, more, err := c.st.Messages(ctx, conv, anchor, dir, limit)
	if err != nil {
		return HistoryPage{}, fmt.Errorf("sdk: %w", err)
	}
	return HistoryPage{Messages: msgs, HasMore: more}, nil
}

// LocalMessages pages through the messages stored on this device only.
func (c *Client) LocalMessages(ctx context.Context, conv contract.ConversationID, anchor contract.ConversationSeq, dir Direction, limit int) ([]Message, bool, error) {
	return c.st.Messages(ctx, conv, anchor, dir, limit)
}

// Conversations lists the local session list, most recent first, with local unread counts.
func (c *Client) Conversations(ctx context.Context) ([]Conversation, error) {
	return c.st.Conversations(ctx)
}

// Pending lists local sends that are not committed: queued ones and definite failures.
func (c *Client) Pending(ctx context.Context) ([]Pending, error) { return c.st.PendingAll(ctx) }

// MarkRead raises the read watermark of a conversation to seq (forward only, clamped to the
// latest seq the device knows of; deciding that a conversation is on screen is the app's job,
// delivery is not reading), emits ConversationsUpdated and returns the conversation with its
// local unread count. The watermark is per user on the server: the client sends MARK_READ at
// once when connected and reconciled, and otherwise after the next login — the raise is durable
// in the store until the server acknowledges it, so it survives a restart too.
func (c *Client) MarkRead(ctx context.Context, conv contract.ConversationID, seq contract.ConversationSeq) (Conversation, error) {
	if c.isClosed() {
		return Conversation{}, ErrClosed
	}
	cv, err := c.st.MarkRead(ctx, conv, seq)
	if err != nil {
		return Conversation{}, fmt.Errorf("sdk: %w", err)
	}
	c.events.push(ConversationsUpdated{Conversations: []Conversation{cv}})
	select {
	case c.reads <- struct{}{}:
	default: // a flush is already due; it reads every owed watermark from the store
	}
	return cv, nil
}

// DirectConversation is the conversation id between this user and peer.
func (c *Client) DirectConversation(peer contract.UserID) contract.ConversationID {
	return contract.DirectConversationID(c.cfg.Tenant, c.cfg.User, peer)
}

// Cursor returns the stored mailbox cursor.
func (c *Client) Cursor(ctx context.Context) (CursorState, error) { return c.st.Cursor(ctx) }

// StorePath is the local database file.
func (c *Client) StorePath() string { return c.st.Path() }

// User is the account this client is for.
func (c *Client) User() contract.UserID { return c.cfg.User }

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// stats are counters the connection goroutine updates and Stats reads.
type stats struct {
	connects, reconnects, pulls, pushes, sends, rebuilds, pushStoreFailures     atomic.Uint64
	firstPullCursor                                                             atomic.Uint64
	sessionPulls, sessionPullFailures, markReads, markReadAcks, markReadRefused atomic.Uint64
	syncs                                                                       atomic.Uint64
	roomDropped, roomShed, roomRejoins                                          atomic.Uint64
}

// Stats is a snapshot of the client's counters.
type Stats struct {
	Connects   uint64 // AUTH_OKs received
	Syncs      uint64 // reconciliations completed (SyncProgress{SyncDone})
	Reconnects uint64 // connection attempts after a failure
	Pulls      uint64 // PULL_MAILBOX sent
	Pushes     uint64 // PUSH_EVENTS received
	Sends      uint64 // SEND frames written (first sends and retries)
	Rebuilds   uint64 // CURSOR_EXPIRED resets
	// PushStoreFailures counts pushes the store refused (the pull delivered them instead).
	PushStoreFailures uint64
	// FirstPullCursor is the cursor of the first PULL_MAILBOX after the latest AUTH_OK: a client
	// that kept its store pulls from where it stopped, not from zero.
	FirstPullCursor contract.MailboxSeq
	// SessionPulls counts PULL_SESSION_LIST pages requested; SessionPullFailures the
	// reconciliations that went on without (the rest of) the list because the server refused it.
	SessionPulls, SessionPullFailures uint64
	// MarkReads counts MARK_READ sent, MarkReadAcks their MARK_READ_ACKs, MarkReadRefused the
	// definite refusals (the watermark stayed local).
	MarkReads, MarkReadAcks, MarkReadRefused uint64
	// RoomEventsDropped counts room events received for a room not joined (a ROOM_LEFT overtook
	// them, or the app left), RoomEventsShed those dropped while the app's event backlog was
	// above Config.EventBacklogPause, RoomRejoins the JOIN_ROOMs the SDK sent on its own.
	RoomEventsDropped, RoomEventsShed, RoomRejoins uint64
	// EventBacklog is the number of events the app has not read; EventBacklogPeak its maximum.
	EventBacklog, EventBacklogPeak int
}

// Stats returns the current counters.
func (c *Client) Stats() Stats {
	q, peak := c.events.backlog()
	return Stats{Connects: c.stats.connects.Load(), Reconnects: c.stats.reconnects.Load(), Pulls: c.stats.pulls.Load(),
		Pushes: c.stats.pushes.Load(), Sends: c.stats.sends.Load(), Rebuilds: c.stats.rebuilds.Load(),
		PushStoreFailures: c.stats.pushStoreFailures.Load(),
		FirstPullCursor:   contract.MailboxSeq(c.stats.firstPullCursor.Load()), EventBacklog: q, EventBacklogPeak: peak,
		SessionPulls: c.stats.sessionPulls.Load(), SessionPullFailures: c.stats.sessionPullFailures.Load(),
		MarkReads: c.stats.markReads.Load(), MarkReadAcks: c.stats.markReadAcks.Load(),
		MarkReadRefused: c.stats.markReadRefused.Load(), Syncs: c.stats.syncs.Load(),
		RoomEventsDropped: c.stats.roomDropped.Load(), RoomEventsShed: c.stats.roomShed.Load(),
		RoomRejoins: c.stats.roomRejoins.Load()}
}
