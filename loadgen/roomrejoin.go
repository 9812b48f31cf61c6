package loadgen

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// Room rejoin, with Config.Reconnect in room mode: a member told ROOM_LEFT UNAVAILABLE (the
// room's RoomWriter was lost, ADR-0034) rejoins with replay_from_room_seq = the last room_seq
// it read + 1, retrying an UNAVAILABLE answer every roomRejoinRetry until the run stops. The
// chaos matrix's RoomWriter cell judges what the rejoins saw:
//
//   - every dropped member is joined again by the end (RoomReport.LeftAtEnd 0);
//   - every rejoin after a lost RoomWriter says replay_truncated (the buffer died with it, so
//     the gap is visible to the client, never silent);
//   - no member reads a room_seq at or below one it already read (Backwards 0), across the
//     new epoch included;
//   - once every member is joined again, every event reaches every member (the per-second
//     publish buckets after RoomReport.AllJoinedAtS).
//
// Other ROOM_LEFT reasons (SLOW_CONSUMER, REMOVED) and runs without Reconnect drop the member
// for the rest of the run, as a capacity measurement must: a rejoin would hide the drop.

// roomRejoinRetry is the pause between two JOIN_ROOMs answered UNAVAILABLE: the gateway's
// link to a restarted RoomWriter reconnects with its own backoff.
const roomRejoinRetry = 200 * time.Millisecond

// onLeft handles a ROOM_LEFT on the member's reader goroutine.
func (rr *roomRun) onLeft(m *roomMember, payload []byte) {
	var left qimv1.RoomLeft
	_ = proto.Unmarshal(payload, &left)
	if !m.left.CompareAndSwap(false, true) {
		return
	}
	if !rr.r.cfg.Reconnect || contract.RoomLeftReason(left.GetReason()) != contract.RoomLeftUnavailable {
		rr.slow.Add(1)
		return
	}
	rr.unavailable.Add(1)
	rr.leftNow.Add(1)
	go rr.rejoin(m, m.maxSeq+1, 0)
}

// rejoin sends JOIN_ROOM with replay from `from` after `wait`; the member's reader takes the
// answer (onRejoinAnswer).
func (rr *roomRun) rejoin(m *roomMember, from uint64, wait time.Duration) {
	if wait > 0 {
		time.Sleep(wait)
	}
	if rr.r.stopping.Load() {
		return
	}
	payload, err := proto.Marshal(&qimv1.JoinRoom{RoomId: rr.roomIDs[m.room], ReplayFromRoomSeq: &from})
	if err != nil {
		rr.r.noteError(err)
		return
	}
	id := m.nextID.Add(1) + 1
	m.mu.Lock()
	m.rejoinID, m.rejoinFrom = id, from
	m.mu.Unlock()
	if err := m.l.w.Send(context.Background(), wire.Message{Opcode: contract.OpJoinRoom, RequestID: id, Payload: payload}); err != nil {
		rr.r.noteError(err)
	}
}

// onRejoinAnswer settles a rejoin's ROOM_JOINED or ERROR and reports whether msg was one.
func (rr *roomRun) onRejoinAnswer(m *roomMember, msg wire.Message) bool {
	m.mu.Lock()
	mine, from := msg.RequestID != 0 && msg.RequestID == m.rejoinID, m.rejoinFrom
	if mine {
		m.rejoinID = 0
	}
	m.mu.Unlock()
	if !mine {
		return false
	}
	if msg.Opcode == contract.OpError {
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(msg.Payload, &e)
		if contract.ErrorCode(e.GetCode()) == contract.ErrCodeUnavailable {
			go rr.rejoin(m, from, roomRejoinRetry)
			return true
		}
		rr.r.countFailure("rejoin " + contract.ErrorCode(e.GetCode()).String())
		return true
	}
	var j qimv1.RoomJoined
	if proto.Unmarshal(msg.Payload, &j) != nil {
		rr.foreign.Add(1)
		return true
	}
	rr.rejoined.Add(1)
	if j.GetReplayTruncated() {
		rr.truncated.Add(1)
	}
	if j.GetReplayTruncated() {
		m.lastSeq = 0 // the truncation is the gap: the next event starts the count again
	}
	m.left.Store(false)
	if rr.leftNow.Add(-1) == 0 {
		rr.allJoinedNs.Store(time.Now().UnixNano())
	}
	return true
}

// secondBuckets counts expected and read deliveries by the second of the run their event was
// published in (a nil *secondBuckets counts nothing).
type secondBuckets struct {
	startUs        int64
	expected, read []atomic.Int64
}

func newSecondBuckets(start time.Time, span time.Duration) *secondBuckets {
	n := int(span/time.Second) + 2
	return &secondBuckets{startUs: start.UnixMicro(), expected: make([]atomic.Int64, n), read: make([]atomic.Int64, n)}
}

// add counts at the second of publishUs (clamped to the buckets' span).
func (b *secondBuckets) add(publishUs, expected, read int64) {
	if b == nil {
		return
	}
	i := min(max(int((publishUs-b.startUs)/1_000_000), 0), len(b.read)-1)
	b.expected[i].Add(expected)
	b.read[i].Add(read)
}

// from sums the buckets of the seconds from sec on.
func (b *secondBuckets) from(sec int) (expected, read int64) {
	for i := max(sec, 0); i < len(b.read); i++ {
		expected += b.expected[i].Load()
		read += b.read[i].Load()
	}
	return expected, read
}

// rejoinReport fills g's rejoin fields; start is the run's start.
func (rr *roomRun) rejoinReport(g *RoomReport, start time.Time) {
	g.UnavailableDrops, g.Rejoins, g.RejoinsTruncated = rr.unavailable.Load(), rr.rejoined.Load(), rr.truncated.Load()
	g.LeftAtEnd, g.Backwards = rr.leftNow.Load(), rr.backwards.Load()
	from := 0
	if ns := rr.allJoinedNs.Load(); ns != 0 {
		g.AllJoinedAtS = time.Unix(0, ns).Sub(start).Seconds()
		from = int(g.AllJoinedAtS) + 1
	}
	if rr.byPublishSecond != nil {
		g.ExpectedAfterRejoin, g.DeliveredAfterRejoin = rr.byPublishSecond.from(from)
	}
}
