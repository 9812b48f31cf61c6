package sdkit

// Rooms through the SDK against the real gateway and RoomWriter (ADR-0034): live delivery, the
// SendRoom ack, the SDK's rejoin after the RoomWriter was lost, and nothing of a room in the
// local store.

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/sdk"
)

// newRoom is a fresh random room id: rooms need no creation.
func newRoom(t *testing.T) contract.U128 {
	t.Helper()
	var b [16]byte
	_, _ = rand.Read(b[:])
	u, err := contract.U128FromBytes(b[:])
	if err != nil {
		t.Fatal(err)
	}
	u.Lo |= 1 // never zero
	return u
}

// roomSeqs are the room_seqs delivered for room, in order, and whether any batch had a gap.
func roomSeqs(evs []sdk.Event, room contract.U128) (seqs []uint64, gap bool) {
	for _, ev := range evs {
		if e, ok := ev.(sdk.RoomEvents); ok && e.Room == room {
			gap = gap || e.Gap != nil
			for _, x := range e.Events {
				seqs = append(seqs, x.RoomSeq)
			}
		}
	}
	return seqs, gap
}

func hasRoomSeq(evs []sdk.Event, room contract.U128, seq uint64) bool {
	seqs, _ := roomSeqs(evs, room)
	for _, s := range seqs {
		if s == seq {
			return true
		}
	}
	return false
}

// A member receives what another user publishes (the publisher need not be joined); the ack
// carries the event's room_seq; after the RoomWriter is killed and restarted the member's SDK
// rejoins by itself and receives the next event behind a gap (the buffer and the old epoch are
// gone); neither client stores anything of the room.
func TestITRoomPublishRejoinAfterRoomWriterLoss(t *testing.T) {
	set := deployment(t)
	if !set.Rooms() {
		t.Skip("this binary runs no RoomWriter")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, bob := newUser(), newUser()
	ac, ar := openIT(t, itConfig(t, set, alice, "a1", t.TempDir()))
	bc, br := openIT(t, itConfig(t, set, bob, "b1", t.TempDir()))
	connectIT(t, ac, ar)
	connectIT(t, bc, br)
	room := newRoom(t)

	joined, err := bc.JoinRoom(ctx, room, sdk.RoomJoinOptions{})
	if err != nil {
		t.Fatalf("JoinRoom: %v", err)
	}
	ack, err := ac.SendRoom(ctx, room, []byte("first"), sdk.SendOptions{})
	if err != nil || ack.RoomSeq <= joined.RoomSeq {
		t.Fatalf("SendRoom: %+v %v, want a room_seq above the join point %d", ack, err, joined.RoomSeq)
	}
	br.wait(t, 20*time.Second, "the first event", func(evs []sdk.Event) bool { return hasRoomSeq(evs, room, ack.RoomSeq) })

	t.Cleanup(func() {
		if !set.Running(svc.Room) {
			_ = set.Start(context.Background(), svc.Room)
		}
	})
	if err := set.Kill(svc.Room); err != nil {
		t.Fatal(err)
	}
	br.wait(t, 30*time.Second, "ROOM_LEFT UNAVAILABLE", func(evs []sdk.Event) bool {
		for _, ev := range evs {
			if l, ok := ev.(sdk.RoomLeft); ok && l.Room == room && l.Reason == contract.RoomLeftUnavailable && l.Rejoining {
				return true
			}
		}
		return false
	})
	if err := set.Start(ctx, svc.Room); err != nil {
		t.Fatal(err)
	}
	br.wait(t, 60*time.Second, "the SDK's rejoin", func(evs []sdk.Event) bool {
		for _, ev := range evs {
			if j, ok := ev.(sdk.RoomJoined); ok && j.Room == room && j.Rejoin {
				return true
			}
		}
		return false
	})
	second, err := ac.SendRoom(ctx, room, []byte("second"), sdk.SendOptions{})
	if err != nil || second.RoomSeq <= ack.RoomSeq+1 {
		t.Fatalf("SendRoom after the restart: %+v %v, want a new epoch above %d", second, err, ack.RoomSeq)
	}
	br.wait(t, 20*time.Second, "the event after the restart", func(evs []sdk.Event) bool {
		return hasRoomSeq(evs, room, second.RoomSeq)
	})
	if seqs, gap := roomSeqs(br.snapshot(), room); len(seqs) != 2 || !gap {
		t.Fatalf("bob got room_seqs %v (gap %v), want the two events with the epoch jump reported", seqs, gap)
	}
	conv, _ := contract.RoomConversationID(room)
	for _, c := range []*sdk.Client{ac, bc} {
		convs, _ := c.Conversations(ctx)
		for _, cv := range convs {
			if cv.ID == conv {
				t.Fatalf("the room is in the session list: %+v", cv)
			}
		}
		if p, _ := c.Pending(ctx); len(p) != 0 {
			t.Fatalf("pending rows %+v after room sends", p)
		}
	}
	if err := bc.LeaveRoom(ctx, room); err != nil || len(bc.Rooms()) != 0 {
		t.Fatalf("LeaveRoom: %v, rooms %+v", err, bc.Rooms())
	}
}
