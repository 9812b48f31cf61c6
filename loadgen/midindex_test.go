package loadgen

import (
	"context"
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// bodylessBytes makes groups of 3 overflow the inline body budget, so the fake gateway's
// mailbox entries carry no body, as the server's do for a group of 1,000 with a 32-byte body.
const bodylessBytes = contract.InlineBodyBudgetBytes/3 + 1

func runBodyless(t *testing.T, gw *fakeGateway, rec *history.Recorder) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := groupConfig(gw, 60, time.Second)
	cfg.BodyBytes, cfg.History = bodylessBytes, rec
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestGroupRunBodylessEntries: with every mailbox entry body-less, each is identified by the
// message_id its SEND_ACK named — 180 entries delivered (own copies included), none lost, one
// end-to-end sample per message and member other than the sender, nothing foreign — and the
// history (resolved headers) passes the checker.
func TestGroupRunBodylessEntries(t *testing.T) {
	gw := newFakeGateway(t)
	rec := history.NewRecorder()
	rep := runBodyless(t, gw, rec)
	c, g := rep.Counts, rep.Group
	if c.Acked != 60 || g.ExpectedEntries != 180 || g.DeliveredEntries != 180 || g.LostEntries != 0 ||
		g.LostOwnCopies != 0 || c.ForeignEvents != 0 || c.UnmatchedEntries != 0 || !Passed(rep.Verdicts) {
		t.Fatalf("counts %+v, group %+v, verdicts %+v", c, g, rep.Verdicts)
	}
	if e2e := rep.Segments[SegEndToEnd.String()]; e2e.Count != 120 {
		t.Errorf("%d end-to-end samples, want 120", e2e.Count)
	}
	if res, err := check.Check(rec.Events(), check.Options{}); err != nil || !res.Passed || res.Delivered != 60 {
		t.Fatalf("checker: %v %s %v", err, res.Summary(), res.Examples)
	}
}

// TestGroupRunBodylessUnknownID: a body-less entry under a message_id no SEND_ACK named (the
// fake's second entry of a double commit) cannot be attributed: it is reported unmatched (and
// foreign), not counted delivered, and every expected entry is still delivered.
func TestGroupRunBodylessUnknownID(t *testing.T) {
	gw := newFakeGateway(t)
	done := false
	gw.setMangle(func(n int64, to, sender contract.UserID) (bool, bool) {
		if done || n < 20 || to == sender {
			return false, false
		}
		done = true
		return false, true
	})
	rep := runBodyless(t, gw, nil)
	c, g := rep.Counts, rep.Group
	if c.UnmatchedEntries != 1 || c.ForeignEvents < 1 || g.DeliveredEntries != 180 || g.LostEntries != 0 ||
		c.DuplicatesAfterDedup != 0 {
		t.Fatalf("counts %+v, group %+v", c, g)
	}
}

// TestBodylessBeforeAck drives one message of a group of 3 by hand: a member's push and pull
// and the sender's own copy all arrive body-less before the SEND_ACK, are parked, and are
// accounted when the ACK names their message_id, with latencies measured to their arrival; the
// third member's pull after the ACK is matched at once, and the complete message leaves the
// index.
func TestBodylessBeforeAck(t *testing.T) {
	r := newRunState(Config{Mode: ModeGroup, GroupSize: 3, AckTimeout: time.Second})
	r.rec = NewRecorder(time.UnixMicro(0))
	conns := make([]*lgConn, 3)
	for i := range conns {
		conns[i] = &lgConn{r: r, idx: i, user: r.user(i), pending: map[uint32]*pendingReq{},
			permits: make(chan struct{}, 1), pullNeeded: make(chan struct{}, 1)}
	}
	r.formGroups(conns)
	sender, m1, m2 := conns[0], conns[1], conns[2]
	sent := time.UnixMicro(1_000_000)
	at := func(ms int) time.Time { return sent.Add(time.Duration(ms) * time.Millisecond) }
	ord := sender.member().out.add()
	sender.permits <- struct{}{}
	r.inflight.Add(1)
	sender.register(7, &pendingReq{kind: kindSend, ord: ord, at: sent})
	mid := contract.U128{Hi: 9, Lo: 1}.Bytes()
	entry := &qimv1.MailboxEvent{MessageId: mid[:], SenderUserId: uint64(sender.user), MessageType: uint32(contract.MessageText)}
	batch := &qimv1.MailboxBatch{Entries: []*qimv1.MailboxEvent{entry}}

	m1.onPush(frame(t, contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{entry}}), at(3))
	sender.apply(batch, at(4))
	m1.apply(batch, at(5))
	if tl := sender.member().out.tally(); tl.delivered != 0 {
		t.Fatalf("delivered %d before the ACK: a body-less entry cannot be attributed yet", tl.delivered)
	}
	sender.onAck(frame(t, contract.OpSendAck, 7, &qimv1.SendAck{MessageId: mid[:]}), at(9))
	if tl := sender.member().out.tally(); tl.acked != 1 || tl.delivered != 2 || tl.missing != 1 || tl.lostOwn != 0 {
		t.Fatalf("after the ACK: %+v", tl)
	}
	wantSeg(t, r, SegSendPush, 1, 3)
	wantSeg(t, r, SegPushPull, 1, 2)
	wantSeg(t, r, SegEndToEnd, 1, 5)
	m2.apply(batch, at(12))
	if tl := sender.member().out.tally(); tl.delivered != 3 || tl.missing != 0 {
		t.Fatalf("after the last member: %+v", tl)
	}
	wantSeg(t, r, SegEndToEnd, 2, 12)
	if pulled, pushed := r.mids.unmatched(); pulled != 0 || pushed != 0 || len(r.mids.shard(mid).known) != 0 {
		t.Fatalf("index not empty: %d pulled, %d pushes parked, %d known", pulled, pushed, len(r.mids.shard(mid).known))
	}
}

// wantSeg checks a segment's sample count and maximum (ms, to the histogram's precision).
func wantSeg(t *testing.T, r *runState, seg Segment, n int64, maxMs float64) {
	t.Helper()
	if s := r.rec.Summary(seg); s.Count != n || math.Abs(s.MaxMs-maxMs) > maxMs/100 {
		t.Errorf("%s: %d samples, max %.3f ms; want %d, %.0f ms", seg, s.Count, s.MaxMs, n, maxMs)
	}
}

func frame(t *testing.T, op contract.Opcode, id uint32, msg proto.Message) wire.Message {
	t.Helper()
	payload, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Message{Opcode: op, RequestID: id, Payload: payload}
}
