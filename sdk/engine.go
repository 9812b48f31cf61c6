package sdk

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/wire"
)

// engine is the connection state machine: the one place that knows what has been sent, what is
// in flight, where the cursor is and what phase the connection is in.
//
// Invariants:
//   - exactly one goroutine (the Client's connection loop) calls it; no field is locked, and no
//     other goroutine reads protocol state;
//   - the cursor moves only after Store.Apply committed a MAILBOX_BATCH; PUSH_EVENTS are stored
//     but never move it; dedup entries, pending resolution and events follow a commit, never
//     precede it;
//   - after every (re)connect nothing pending is sent before the mailbox, then the session list
//     and then the history backfill (after a REBUILD, or of conversations the list revealed) have
//     been reconciled: a send the server committed while the ACK was lost is resolved through its
//     own mailbox copy instead of being sent again;
//   - the read watermark only moves forward, whatever reports it; MARK_READ goes out only once
//     reconciled, for what the store says the server has not taken into account;
//   - at most one PULL_MAILBOX is in flight; a push during a pull marks the pull dirty, which
//     causes exactly one more pull after the last page has been committed;
//   - rooms never touch the store: no cursor, row, unread or pending send; they go live at
//     AUTH_OK, and the joined set outlives the engine (roomstate.go).
//
// How: the loop feeds it frames, wake-ups (Send stored something), commands (History) and timer
// ticks; it answers with frames through a frameSink and with events, and reports through end
// when the connection must be dropped. It does no I/O of its own besides the store.
//
// Rejected: a mutex-guarded client with the read loop, Send and timers all touching the same
// maps. It is what the predecessor's SDK started with; every fix for a race (a pending resolved
// before its commit, a cursor moved by a push) added a lock order to remember. One owner makes
// each of those rules a sequence of statements in one function
// (docs/adr/0016-sdk-engine-single-owner.md).
type engine struct {
	cfg     *Config
	st      localStore
	emit    func(Event)
	stats   *stats
	log     *slog.Logger
	hooks   testHooks
	dedup   *dedupSet
	backlog func() int
	// rooms is the Client's joined set and room sends; it outlives the engine (roomstate.go).
	rooms *roomSet
	loop  chan struct{} // the connection loop running the engine: room calls name it (roomCmd.loop)
	// background is the Client's app state (SetForeground); nil reads as the foreground.
	background *atomic.Bool

	// Per connection; attach resets them.
	sink       frameSink
	phase      phase
	nextID     uint32
	reqs       map[uint32]*request
	order      []reqStamp // outstanding requests by send time, for the ACK probe
	end        *connEnd
	online     bool
	heartbeat  time.Duration
	lastPing   time.Time
	probeAt    time.Time // send time of the unanswered probe; zero when none
	lastRecv   time.Time
	cursor     contract.MailboxSeq
	pull       pullState
	sync       syncState
	inflight   map[contract.ClientMessageID]uint32
	dispatched int64 // highest ordinal sent on this connection; -1 before the first
	holdUntil  time.Time
	sendFails  int
	backfill   backfillState
	sess       sessionsState
	reads      readState
	creates    createState
}

type phase uint8

const (
	phaseAuth  phase = 1 // AUTH sent, waiting for AUTH_OK
	phaseSync  phase = 2 // reconciling: pulling the mailbox, backfilling after a REBUILD
	phaseReady phase = 3 // reconciled: pending sends flow
)

type reqKind uint8

const (
	reqAuth reqKind = iota + 1
	reqPing
	reqSend
	reqPull
	reqHistory
	reqBackfill
	reqSessions
	reqMarkRead
	reqCreate // CREATE_GROUP of a queued store.GroupCreate
	reqRPC    // an app's request answered by one frame (PULL_MEMBERS, LEAVE_GROUP)
	reqRoomJoin
	reqRoomLeave
	reqRoomSend // a SEND with a room target: not a pending row
)

// request is one uplink frame waiting for its answer.
type request struct {
	kind    reqKind
	op      contract.Opcode
	sentAt  time.Time
	cmid    contract.ClientMessageID // reqSend
	ordinal uint64                   // reqSend
	amend   *store.Amend             // reqSend of an amendment: applied with its ack
	hist    *historyCmd              // reqHistory
	mark    store.ReadMark           // reqMarkRead
	create  *store.GroupCreate       // reqCreate
	rpc     *rpcCmd                  // reqRPC
	room    contract.ConversationID  // reqRoomJoin, reqRoomLeave
	rsend   *roomSend                // reqRoomSend
}

type reqStamp struct {
	id     uint32
	sentAt time.Time
}

// connEnd says why the connection must close and whether the loop may reconnect.
type connEnd struct {
	err        error
	terminal   bool
	retryAfter time.Duration
	// loginRefused: the gateway answered AUTH with a retryable refusal (UNAVAILABLE): it is up
	// but cannot admit the client yet, so the reconnect delay is capped (reconnect, backoff.go).
	loginRefused bool
}

// frameSink writes one frame to the connection and returns once it is on the socket.
type frameSink interface {
	send(op contract.Opcode, requestID uint32, payload []byte) error
}

func newEngine(cfg *Config, st localStore, emit func(Event), stats *stats, backlog func() int) *engine {
	return &engine{cfg: cfg, st: st, emit: emit, stats: stats, log: cfg.Logger, dedup: newDedupSet(4096), backlog: backlog,
		rooms: newRoomSet()}
}

// attach starts a connection: it resets the per-connection state and sends AUTH with the stored
// cursor (so AUTH_OK.has_offline_data is exact).
func (e *engine) attach(sink frameSink, token string, now time.Time) {
	e.sink, e.phase, e.end, e.online = sink, phaseAuth, nil, false
	e.reqs, e.order, e.inflight = map[uint32]*request{}, e.order[:0], map[contract.ClientMessageID]uint32{}
	e.heartbeat, e.lastPing, e.probeAt, e.lastRecv = contract.HeartbeatStart, now, time.Time{}, now
	e.pull, e.sync, e.backfill, e.sess = pullState{}, syncState{}, backfillState{}, sessionsState{}
	e.reads = readState{inflight: map[contract.ConversationID]uint32{}}
	e.creates = createState{inflight: map[contract.U128]uint32{}}
	e.dispatched, e.holdUntil, e.sendFails = -1, time.Time{}, 0
	cur, err := e.st.Cursor(storeCtx)
	if err != nil {
		e.fail(fmt.Errorf("sdk: read cursor: %w", err))
		return
	}
	e.cursor = cur.Seq
	tenant := e.cfg.Tenant.Bytes()
	e.request(reqAuth, contract.OpAuth, &qimv1.AuthRequest{Token: token, DeviceId: e.cfg.Device,
		ClientVersion: e.cfg.ClientVersion, TenantId: tenant[:],
		LastMailboxCursor: &qimv1.MailboxCursor{MailboxSeq: uint64(e.cursor)}}, now, nil)
}

// detach ends the connection's requests: app History and group calls learn ErrOffline, sends
// and group creates stay queued in the store, joined rooms and room sends wait for the next
// connection in memory.
func (e *engine) detach() {
	e.detachRooms()
	for _, r := range e.reqs {
		switch {
		case r.kind == reqHistory && r.hist != nil:
			r.hist.reply <- historyResult{err: ErrOffline}
		case r.kind == reqRPC && r.rpc != nil:
			r.rpc.reply <- rpcResult{err: ErrOffline}
		}
	}
	e.sink, e.reqs, e.online = nil, nil, false
}

// fail ends the connection; the loop reconnects.
func (e *engine) fail(err error) {
	if e.end == nil {
		e.end = &connEnd{err: err}
	}
}

// terminate ends the connection and the loop.
func (e *engine) terminate(err error) {
	if e.end == nil || !e.end.terminal {
		e.end = &connEnd{err: err, terminal: true}
	}
}

// request sends a request frame and records it; it returns the request id, 0 on failure.
func (e *engine) request(kind reqKind, op contract.Opcode, msg proto.Message, now time.Time, r *request) uint32 {
	payload, err := proto.Marshal(msg)
	if err != nil {
		e.fail(fmt.Errorf("sdk: encode %s: %w", op, err))
		return 0
	}
	e.nextID++
	if e.nextID == 0 {
		e.nextID = 1
	}
	id := e.nextID
	if err := e.sink.send(op, id, payload); err != nil {
		e.fail(fmt.Errorf("sdk: write %s: %w", op, err))
		return 0
	}
	if r == nil {
		r = &request{}
	}
	r.kind, r.op, r.sentAt = kind, op, now
	e.reqs[id] = r
	if kind != reqPing {
		e.order = append(e.order, reqStamp{id: id, sentAt: now})
	}
	return id
}

// onFrame handles one downlink frame.
func (e *engine) onFrame(m wire.Message, now time.Time) {
	e.lastRecv, e.probeAt = now, time.Time{} // any frame proves the connection alive
	switch m.Opcode {
	case contract.OpAuthOK:
		e.onAuthOK(m, now)
	case contract.OpPong:
		e.onPong(m, now)
	case contract.OpPing:
		e.onServerPing(m)
	case contract.OpKicked:
		e.onKicked(m)
	case contract.OpError:
		e.onError(m, now)
	case contract.OpSendAck:
		if r := e.reqs[m.RequestID]; r != nil && r.kind == reqRoomSend {
			e.onRoomAck(m, now)
		} else {
			e.onAck(m, now)
		}
	case contract.OpMailboxBatch:
		e.onBatch(m, now)
	case contract.OpPushEvents:
		e.onPush(m, now)
	case contract.OpHistoryBatch:
		e.onHistory(m, now)
	case contract.OpSessionListBatch:
		e.onSessionList(m, now)
	case contract.OpSessionDelta:
		e.onSessionDelta(m, now)
	case contract.OpTypingEvent:
		e.onTypingEvent(m, now)
	case contract.OpReadReceipt:
		e.onReadReceipt(m)
	case contract.OpReactionEvent:
		e.onReactionEvent(m)
	case contract.OpMarkReadAck:
		e.onMarkReadAck(m, now)
	case contract.OpGroupCreated:
		e.onGroupCreated(m, now)
	case contract.OpRoomJoined:
		e.onRoomJoined(m, now)
	case contract.OpRoomLeft:
		e.onRoomLeft(m, now)
	case contract.OpRoomEvents:
		e.onRoomEvents(m)
	default:
		// Any answer to a Client.call (MEMBERS_BATCH, READ_RECEIPTS_BATCH, ...): routed by its
		// request id, so a new call needs no case here and can never wait for a frame dropped.
		if r := e.reqs[m.RequestID]; m.RequestID != 0 && r != nil && r.kind == reqRPC {
			e.onRPCAnswer(m)
			return
		}
		e.log.Debug("sdk: ignoring frame", "opcode", m.Opcode.String())
	}
}

// take removes and returns the request a response answers, if it is of the expected kind.
func (e *engine) take(id uint32, kinds ...reqKind) *request {
	r := e.reqs[id]
	if r == nil {
		return nil
	}
	for _, k := range kinds {
		if r.kind == k {
			delete(e.reqs, id)
			return r
		}
	}
	return nil
}

func (e *engine) onAuthOK(m wire.Message, now time.Time) {
	if e.take(m.RequestID, reqAuth) == nil {
		e.fail(fmt.Errorf("%w: unexpected AUTH_OK", ErrProtocol))
		return
	}
	var ok qimv1.AuthOk
	if err := proto.Unmarshal(m.Payload, &ok); err != nil {
		e.fail(fmt.Errorf("%w: AUTH_OK: %v", ErrProtocol, err))
		return
	}
	if contract.UserID(ok.GetUserId()) != e.cfg.User {
		e.terminate(fmt.Errorf("%w: store of user %d, server says %d", ErrIdentity, e.cfg.User, ok.GetUserId()))
		return
	}
	if iv := time.Duration(ok.GetHeartbeatIntervalMs()) * time.Millisecond; iv > 0 {
		e.heartbeat = iv
	}
	e.online, e.phase, e.lastPing = true, phaseSync, now
	e.stats.connects.Add(1)
	e.emit(Online{SessionEpoch: ok.GetSessionEpoch(), HeartbeatInterval: e.heartbeat})
	e.startSync(SyncMailbox, now)
	e.rejoinRooms(now) // rooms need no reconciliation: they hold nothing the mailbox could prove
	e.flushRoomSends(now)
}
