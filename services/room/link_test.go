package room

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// describe renders downs as one line each: "J<call>" for a join answer, "<room>#<n>@<first seq>"
// for a broadcast of n events.
func describe(downs []*internalv1.RoomLinkDown, names map[string]string) []string {
	out := []string{}
	for _, d := range downs {
		var parts []string
		for _, it := range d.GetItems() {
			if j := it.GetJoined(); j != nil {
				parts = append(parts, fmt.Sprintf("J%d", j.GetCallId()))
				continue
			}
			b := it.GetEvents()
			parts = append(parts, fmt.Sprintf("%s#%d@%d", names[string(b.GetRoomId())], len(b.GetEvents()), b.GetEvents()[0].GetRoomSeq()))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func TestPack(t *testing.T) {
	tally := &tally{}
	a := newRoom(roomKey{tenant: testTenant, conv: roomConv(t, roomBytes(1))}, t0, 10, time.Minute, tally)
	b := newRoom(roomKey{tenant: testTenant, conv: roomConv(t, roomBytes(2))}, t0, 10, time.Minute, tally)
	names := map[string]string{string(a.roomID): "a", string(b.roomID): "b"}
	ev := func(r *room, seq uint64, size int) linkItem {
		return linkItem{room: r, ev: &qimv1.RoomEvent{RoomSeq: seq}, size: size}
	}
	answer := func(call uint64, size int) linkItem {
		return linkItem{answer: &internalv1.RoomJoinAnswer{CallId: call}, size: size}
	}
	run := func(r *room, first uint64, n int) []linkItem {
		var out []linkItem
		for i := range n {
			out = append(out, ev(r, first+uint64(i), 10))
		}
		return out
	}
	for _, c := range []struct {
		name   string
		items  []linkItem
		budget int
		want   []string
	}{
		{"nothing", nil, downBytesMax, []string{}},
		{"one room merges", run(a, 1, 3), downBytesMax, []string{"a#3@1"}},
		{"interleaved rooms stay apart", []linkItem{ev(a, 1, 10), ev(b, 1, 10), ev(a, 2, 10)}, downBytesMax,
			[]string{"a#1@1 b#1@1 a#1@2"}},
		{"a join answer keeps its place", []linkItem{ev(a, 1, 10), answer(7, 10), ev(a, 2, 10), ev(a, 3, 10)}, downBytesMax,
			[]string{"a#1@1 J7 a#2@2"}},
		{"batches hold at most RoomEventsBatchMax", run(a, 1, contract.RoomEventsBatchMax+44), downBytesMax,
			[]string{fmt.Sprintf("a#%d@1 a#44@%d", contract.RoomEventsBatchMax, contract.RoomEventsBatchMax+1)}},
		{"the byte budget starts a new message", run(a, 1, 4), 25, []string{"a#3@1", "a#1@4"}},
		{"an item larger than the budget is sent whole", []linkItem{answer(1, 100), ev(a, 1, 10)}, 25, []string{"J1", "a#1@1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			downs := pack(c.items, c.budget)
			if got := describe(downs, names); !slices.Equal(got, c.want) {
				t.Fatalf("packed %q, want %q", got, c.want)
			}
			n := 0
			for _, d := range downs {
				for _, it := range d.GetItems() {
					n += max(1, len(it.GetEvents().GetEvents()))
				}
			}
			if n != len(c.items) {
				t.Fatalf("packed %d items, want %d (nothing lost or repeated)", n, len(c.items))
			}
		})
	}
}

// The queue wakes its sender once per batch, and the push that finds it full ends the link.
func TestLinkQueue(t *testing.T) {
	s, _ := newTestService(t, nil)
	l := newLink(1, 3, &s.queued)
	woken := func() bool {
		select {
		case <-l.wake:
			return true
		default:
			return false
		}
	}
	it := linkItem{answer: &internalv1.RoomJoinAnswer{}}
	l.push(it)
	l.push(it)
	if !woken() || woken() {
		t.Fatal("two pushes into an empty queue must leave exactly one wake-up")
	}
	if got := l.take(nil); len(got) != 2 || s.queued.Load() != 0 {
		t.Fatalf("took %d items, %d still counted queued", len(got), s.queued.Load())
	}
	for range 3 {
		l.push(it)
	}
	if l.isEnded() || !woken() || s.queued.Load() != 3 {
		t.Fatalf("a queue at its bound is not slow yet (ended %v, queued %d)", l.isEnded(), s.queued.Load())
	}
	l.push(it)
	select {
	case <-l.slow:
	default:
		t.Fatal("the push beyond the bound did not end the link as slow")
	}
	if !l.isEnded() || s.queued.Load() != 0 || len(l.take(nil)) != 0 {
		t.Fatal("a slow link keeps its queue")
	}
	if l.admit(nil, it) {
		t.Fatal("an ended link admitted a join")
	}
}

// A slow link is ended by the publish that overflows it, its handler's sender reports
// RESOURCE_EXHAUSTED, and closing it removes every membership it had.
func TestSlowLinkEndsAndLeavesItsRooms(t *testing.T) {
	s, _ := newTestService(t, func(c *Config) { c.LinkQueue = minLinkQueue })
	roomA, roomB := roomBytes(10), roomBytes(11)
	slow, healthy := s.openLink(), s.openLink()
	s.join(slow, joinCall(1, roomA, 7, nil))
	s.join(slow, joinCall(2, roomB, 8, nil))
	s.join(slow, joinCall(3, roomA, 9, nil))
	s.join(healthy, joinCall(1, roomA, 7, nil))
	if j, m := s.tally.joined.Load(), s.tally.members.Load(); j != 4 || m != 3 {
		t.Fatalf("joined %d, members %d; want 4 connections of 3 (room, user) pairs", j, m)
	}
	// The slow link holds 3 answers; the publishes fill the rest of its queue, and one more
	// overflows it. The healthy link's sender keeps up.
	for i := range s.cfg.LinkQueue - 3 {
		mustPublish(t, s, publishOf(t, 1, roomA, uint64(i+1), "x"))
		healthy.take(nil)
	}
	if slow.isEnded() {
		t.Fatal("a link with a full queue but no overflow was ended")
	}
	mustPublish(t, s, publishOf(t, 1, roomA, 100000, "x"))
	if !slow.isEnded() || healthy.isEnded() {
		t.Fatalf("after the overflow: slow ended %v, healthy ended %v", slow.isEnded(), healthy.isEnded())
	}
	// The receiver may stop on the ended link before the sender sees it: still a slow end.
	recvDone := make(chan error, 1)
	recvDone <- errLinkEnded
	reason, err := s.sendLoop(&fakeStream{ctx: context.Background()}, slow, recvDone)
	if reason != endSlow || status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the slow link's sender ended with %s, %v; want slow and RESOURCE_EXHAUSTED", reason, err)
	}
	s.closeLink(slow, reason, err)
	if j, m := s.tally.joined.Load(), s.tally.members.Load(); j != 1 || m != 1 {
		t.Fatalf("after the slow link closed: joined %d, members %d; want only the healthy link's 1", j, m)
	}
	s.rooms.with(roomKey{testTenant, roomConv(t, roomA)}, t0, false, func(r *room) {
		if _, ok := r.links[slow]; ok || len(r.links) != 1 || len(r.users) != 1 {
			t.Fatalf("room A still has the slow link (%d links, %d users)", len(r.links), len(r.users))
		}
	})
	s.rooms.with(roomKey{testTenant, roomConv(t, roomB)}, t0, false, func(r *room) {
		if len(r.links) != 0 || len(r.users) != 0 {
			t.Fatalf("room B still has %d links, %d users", len(r.links), len(r.users))
		}
	})
	if s.queued.Load() != int64(len(healthy.take(nil))) {
		t.Fatal("the queued-items gauge still counts the slow link's dropped queue")
	}
}

// A join answer is queued after every event it counts and before every later one: the room's
// events that follow it on the link are exactly its room_seq + 1, + 2, … Here the publisher runs
// on its own goroutine while the join happens, so the join lands between publishes.
func TestJoinAnswerOrderedAmongConcurrentPublishes(t *testing.T) {
	s, _ := newTestService(t, nil)
	room := roomBytes(20)
	l := s.openLink()
	started, joined, done := make(chan struct{}), make(chan struct{}), make(chan uint64)
	go func() {
		var last uint64
		after := -1 // publishes left once the join is done
		for i := uint64(1); after != 0; i++ {
			ack, _, err := s.publish(context.Background(), publishOf(t, 1, room, i, "x"))
			if err != nil {
				t.Errorf("publish: %v", err)
				break
			}
			last = ack.GetConversationSeq()
			switch {
			case i == 50:
				close(started)
			case after > 0:
				after--
			}
			select {
			case <-joined:
				if after < 0 {
					after = 200
				}
			default:
			}
		}
		done <- last
	}()
	<-started
	s.join(l, joinCall(1, room, 7, nil))
	close(joined)
	last := <-done
	items := l.take(nil)
	if len(items) == 0 || items[0].answer == nil {
		t.Fatalf("the link's first item is not the join answer (%d items)", len(items))
	}
	at := items[0].answer.GetJoined().GetRoomSeq()
	var got []uint64
	for _, it := range items[1:] {
		got = append(got, it.ev.GetRoomSeq())
	}
	if want := seqRange(at+1, last); !slices.Equal(got, want) || len(want) < 200 {
		t.Fatalf("after the answer at %d the link carried %v, want %d..%d in order", at, got, at+1, last)
	}
}

// fakeStream is a Link stream for driving the sender directly: Send records, nothing else runs.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent []*internalv1.RoomLinkDown
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Send(d *internalv1.RoomLinkDown) error {
	f.sent = append(f.sent, d)
	return nil
}

func (f *fakeStream) Recv() (*internalv1.RoomLinkUp, error) { return nil, context.Canceled }
