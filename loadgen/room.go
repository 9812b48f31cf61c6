package loadgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// Room mode (ModeRoom, ADR-0034): Connections joined connections in rooms of RoomSize members,
// RoomSenders of each room's members publishing; Rate is room events published per second across
// all rooms (open model, the same Scheduler as the other modes). Every member reads every event
// of its room and measures the broadcast latency from the publish time in the body; the run
// counts delivered events against expected ones (ACKed events × members), room_seq gaps and
// slow-consumer drops, and the system's CPU per delivered event.
//
// Why a path of its own rather than a role of lgConn: a room member has no mailbox, cursor,
// pull worker or settle-by-pull — the machinery lgConn exists for — and a room run must hold
// 10,000 connections with one goroutine each, not the five of a message connection.

// roomRun is one room-mode run.
type roomRun struct {
	r       *runState
	rooms   int
	members []*roomMember // by connection index; room i holds members [i*RoomSize, (i+1)*RoomSize)
	senders []*roomMember // sink k of the scheduler: room k % rooms, its sender k / rooms
	roomIDs [][]byte
	start   time.Time // the measured window's start

	delivered, inWindow, gaps, slow, foreign, lost, kicked atomic.Int64
	expected, acked, failed, sent, sentInWindow            atomic.Int64
	unsent                                                 atomic.Int64
	// Rejoins (roomrejoin.go): members dropped UNAVAILABLE, rejoins answered, those truncated,
	// events read at or below a member's largest room_seq, members left now, and when the last
	// dropped member was joined again (Unix ns, 0 never).
	unavailable, rejoined, truncated, backwards, leftNow, allJoinedNs atomic.Int64
	// byPublishSecond counts, by the second of the run an event was published in, its
	// expected and its read deliveries (judged after every member rejoined).
	byPublishSecond *secondBuckets
}

// roomMember is one joined connection.
type roomMember struct {
	idx    int
	room   int
	l      *link
	jobs   chan time.Time // senders only: scheduled arrivals
	left   atomic.Bool    // ROOM_LEFT received: the member no longer counts as a recipient
	nextID atomic.Uint32
	ord    uint64

	mu         sync.Mutex
	pending    map[uint32]int64 // request id → sent at, Unix µs
	rejoinID   uint32           // the JOIN_ROOM of a rejoin in flight (roomrejoin.go), 0 none
	rejoinFrom uint64

	// Reader goroutine only: the room_seq read last (0 after a truncated rejoin: no gap is
	// counted across it) and the largest ever read (an event at or below it is read twice or
	// out of order).
	lastSeq, maxSeq uint64
}

// roomID is room i's id: the run id above the room index, so runs on one stack do not meet.
func (rr *roomRun) roomID(i int) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, rr.r.runID)
	binary.BigEndian.PutUint64(b[8:], uint64(i)+1)
	return b
}

// setupRooms dials and authenticates every member with bounded concurrency and joins it to its
// room, synchronously, before any reader runs: the measured window starts with every room full.
func (rr *roomRun) setupRooms(ctx context.Context) error {
	cfg := &rr.r.cfg
	rr.rooms = cfg.Connections / cfg.RoomSize
	for i := 0; i < rr.rooms; i++ {
		rr.roomIDs = append(rr.roomIDs, rr.roomID(i))
	}
	rr.members = make([]*roomMember, rr.rooms*cfg.RoomSize)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.DialConcurrency)
	for i := range rr.members {
		g.Go(func() error {
			l, err := rr.r.dialLink(gctx, rr.r.user(i))
			if err != nil {
				return err
			}
			m := &roomMember{idx: i, room: i / cfg.RoomSize, l: l, pending: map[uint32]int64{}}
			rr.members[i] = m
			return rr.join(m)
		})
	}
	err := g.Wait()
	if err != nil {
		rr.closeAll()
		return err
	}
	for s := 0; s < cfg.RoomSenders; s++ {
		for room := 0; room < rr.rooms; room++ {
			m := rr.members[room*cfg.RoomSize+s]
			m.jobs = make(chan time.Time, cfg.QueuePerConn)
			rr.senders = append(rr.senders, m)
		}
	}
	return nil
}

// join sends JOIN_ROOM (live only) and reads its answer on the member's fresh link.
func (rr *roomRun) join(m *roomMember) error {
	payload, err := proto.Marshal(&qimv1.JoinRoom{RoomId: rr.roomIDs[m.room]})
	if err != nil {
		return err
	}
	if err := m.l.w.Send(context.Background(), wire.Message{Opcode: contract.OpJoinRoom, RequestID: 1, Payload: payload}); err != nil {
		return fmt.Errorf("loadgen: JOIN_ROOM of connection %d: %w", m.idx, err)
	}
	_ = m.l.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = m.l.nc.SetReadDeadline(time.Time{}) }()
	ans, err := m.l.rd.ReadMessage()
	if err != nil {
		return fmt.Errorf("loadgen: JOIN_ROOM answer of connection %d: %w", m.idx, err)
	}
	if ans.Opcode != contract.OpRoomJoined {
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(ans.Payload, &e)
		return fmt.Errorf("loadgen: JOIN_ROOM of connection %d answered %s %s: %s", m.idx, ans.Opcode,
			contract.ErrorCode(e.GetCode()), e.GetMessage())
	}
	return nil
}

func (rr *roomRun) closeAll() {
	for _, m := range rr.members {
		if m != nil {
			m.l.teardown()
		}
	}
}

// read is a member's reader goroutine until its socket ends.
func (rr *roomRun) read(m *roomMember, rec *Recorder) {
	defer close(m.l.closed)
	for {
		msg, err := m.l.rd.ReadMessage()
		if err != nil {
			if !rr.r.stopping.Load() {
				rr.lost.Add(1)
			}
			return
		}
		switch msg.Opcode {
		case contract.OpRoomEvents:
			rr.onEvents(m, msg.Payload, rec)
		case contract.OpRoomJoined:
			rr.onRejoinAnswer(m, msg)
		case contract.OpSendAck, contract.OpError:
			if !rr.onRejoinAnswer(m, msg) {
				rr.onAnswer(m, msg, rec)
			}
		case contract.OpRoomLeft:
			rr.onLeft(m, msg.Payload)
		case contract.OpKicked:
			rr.kicked.Add(1)
		}
	}
}

// onEvents records each event of the run: latency from the body's publish time, and gaps in
// the member's room_seq.
func (rr *roomRun) onEvents(m *roomMember, payload []byte, rec *Recorder) {
	var evs qimv1.RoomEvents
	if proto.Unmarshal(payload, &evs) != nil {
		rr.foreign.Add(1)
		return
	}
	now := time.Now().UnixMicro()
	end := rr.r.windowEnd().UnixMicro()
	for _, ev := range evs.GetEvents() {
		h, err := parseBody(ev.GetBody())
		if err != nil || h.run != rr.r.runID {
			rr.foreign.Add(1)
			continue
		}
		s := ev.GetRoomSeq()
		if s <= m.maxSeq {
			rr.backwards.Add(1) // read twice or out of order: not a delivery
			continue
		}
		rec.Record(SegBroadcast, now-h.sentUs)
		rec.CountDelivered()
		rr.delivered.Add(1)
		rr.byPublishSecond.add(h.sentUs, 0, 1)
		if h.sentUs <= end {
			rr.inWindow.Add(1)
		}
		if m.lastSeq != 0 && s > m.lastSeq+1 {
			rr.gaps.Add(int64(s - m.lastSeq - 1))
		}
		m.lastSeq, m.maxSeq = s, s
	}
}

// onAnswer settles a publish: SEND_ACK adds the room's members to the expected deliveries.
func (rr *roomRun) onAnswer(m *roomMember, msg wire.Message, rec *Recorder) {
	m.mu.Lock()
	sentUs, ok := m.pending[msg.RequestID]
	delete(m.pending, msg.RequestID)
	m.mu.Unlock()
	if !ok {
		return
	}
	if msg.Opcode == contract.OpError {
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(msg.Payload, &e)
		rr.failed.Add(1)
		rr.r.countFailure(contract.ErrorCode(e.GetCode()).String())
		return
	}
	rec.Record(SegSendAck, time.Now().UnixMicro()-sentUs)
	rec.CountAcked()
	rr.acked.Add(1)
	rr.expected.Add(int64(rr.r.cfg.RoomSize))
	rr.byPublishSecond.add(sentUs, int64(rr.r.cfg.RoomSize), 0)
}
